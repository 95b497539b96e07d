"""One RL run: a private copy of the starting policy, its frozen KL reference, the method
that ``training.rl.algorithm`` names (``methods.registry``), the held-out evaluator, and
the core loop (``training.rl.train_rl``). The training pipeline runs one; the experiment
grid runs one per cell. ``hindsight.config.rl_setup`` builds the ``RLSetup`` from the
project's settings."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.evaluation.heldout import HeldoutConfig, evaluate_agents
from hindsight.evaluation.metrics import success_summary
from hindsight.evaluation.pass_k import pass_k_summary
from hindsight.methods.base import MethodContext
from hindsight.methods.registry import build_method
from hindsight.policy import Policy
from hindsight.rollout.engine import RolloutConfig
from hindsight.rollout.imagination import CALLS_COLUMN
from hindsight.rollout.tasks import TaskRef
from hindsight.skills.analyzers import AnalyzerConfig
from hindsight.training.data_parallel import DataParallel
from hindsight.training.rl import RLRunResult, train_rl
from hindsight.training.rl_config import RLConfig

@dataclass
class RLSetup:
    """What every RL run of a pipeline shares, built once from the settings."""

    specs: list[EnvironmentSpec]
    """The environment's games."""
    rollout: RolloutConfig
    """How training episodes are played (group size and seed are set per update)."""
    heldout: HeldoutConfig
    """Held-out evaluation during training."""
    pool: list[TaskRef]
    """The training tasks."""
    analyzer: AnalyzerConfig | None = None
    """How the policy writes its skills (SEED, OPID)."""
    env_factory: Callable | None = None
    """Builds the training environments of ``pool`` (None: ``envs.make_env``; EMPO: expert
    replay, ``methods.empo_run.empo_grid_setup``). Held-out evaluation always plays the
    real environment (``specs``)."""


def weights_fingerprint(model) -> str:
    """A short hash of a model's weights (identifies a starting checkpoint's content)."""
    digest = hashlib.sha1()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()[:12]


def checkpoint_directory(root: str | Path, settings: dict[str, Any], start_model) -> Path:
    """Checkpoints of a run live under a fingerprint of its settings and starting weights:
    a killed run restarted with the same inputs resumes; changed inputs start afresh."""
    blob = json.dumps(settings, sort_keys=True, default=str)
    fingerprint = hashlib.sha1((blob + weights_fingerprint(start_model)).encode()).hexdigest()[:12]
    return Path(root) / fingerprint


def frozen_copy(model):
    """A copy of ``model`` with gradients off, in eval mode (the KL reference)."""
    reference = copy.deepcopy(model).eval()
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    return reference


def imagination_metrics(steps: pd.DataFrame) -> dict[str, float]:
    """``eval/{split}/world_model/calls_per_step``: in-response world-model calls per step of
    the held-out episodes, when the policy imagined (``rollout.imagination``)."""
    if CALLS_COLUMN not in steps.columns:
        return {}
    calls = steps.groupby("eval_split")[CALLS_COLUMN].mean()
    return {f"eval/{split}/world_model/calls_per_step": float(value) for split, value in calls.items()}


def heldout_evaluator(
    specs: Sequence[EnvironmentSpec], rollout: RolloutConfig, heldout: HeldoutConfig
) -> Callable[[object, int], dict[str, float]]:
    """``(policy, update) -> metrics``: success rate and episode count per held-out split and
    task type of the first decoding in ``heldout.play.decodings``, with ``heldout.play.trials_per_task``
    above 1 also ``eval/{split}/{task_type}/pass_hat_{k}`` for k = 1..trials (and the
    in-response world-model calls per step when ``rollout.imagination`` is set)."""
    first = next(iter(heldout.play.decodings))

    def evaluate(policy, update: int) -> dict[str, float]:
        steps = evaluate_agents(policy, specs, make_env, rollout, heldout, policy_label="policy", include_random=False)
        summary = success_summary(steps)
        metrics = {}
        for row in summary.itertuples(index=False):
            if row.agent == f"policy-{first}":
                metrics[f"eval/{row.eval_split}/{row.task_type}/success_rate"] = row.success_rate
                metrics[f"eval/{row.eval_split}/{row.task_type}/episodes"] = float(row.episodes)
        if heldout.play.trials_per_task > 1:
            played = steps[steps["agent"] == f"policy-{first}"]
            for row in pass_k_summary(played, resamples=1).itertuples(index=False):
                if row.breakdown == "task_type":
                    metrics[f"eval/{row.eval_split}/{row.group}/pass_hat_{row.k}"] = float(row.pass_k)
        metrics.update(imagination_metrics(steps[steps["agent"] == f"policy-{first}"]))
        return metrics

    return evaluate


def run_rl(
    start_policy: Policy,
    config: RLConfig,
    setup: RLSetup,
    checkpoint_dir: str | Path | None,
    *,
    seed: int,
    skill_bank: dict[str, str] | None = None,
    log_metrics: Callable[[dict, int], None] | None = None,
    evaluate_start: bool = False,
    start_metrics: dict[str, float] | None = None,
    parallel: DataParallel | None = None,
    world_model=None,
) -> RLRunResult:
    """Train a private copy of ``start_policy`` (the caller's object is left untouched).

    Args:
        start_policy: The starting checkpoint; also the frozen KL reference.
        config: RL settings.
        setup: Tasks, rollout, held-out and analyzer settings (``rl_setup``).
        checkpoint_dir: Checkpoints (resumed when present).
        seed: The run's seed (task draws, rollouts, mini-batch order).
        skill_bank: Fixed skills (the ablation's teacher).
        world_model: The trained world-model simulator (WM-R1).
        log_metrics: ``(metrics, step)`` sink (MLflow).
        evaluate_start: Also evaluate the starting policy, logged as update 0 (learning curves).
        start_metrics: That evaluation when the caller already has it (the held-out tasks
            and seed are fixed, so it is the same for every run from one checkpoint).
        parallel: One process of a ``torchrun`` learner (``train_rl``).

    Returns:
        ``RLRunResult``; with ``evaluate_start`` the history's first row is update 0.
    """
    policy = copy.deepcopy(start_policy)
    reference = frozen_copy(start_policy.model)
    method = build_method(config, MethodContext(analyzer=setup.analyzer, skill_bank=skill_bank, world_model=world_model))
    evaluate = heldout_evaluator(setup.specs, method.rollout_settings(setup.rollout, heldout=True), setup.heldout)
    if evaluate_start:
        start_metrics = {"update": 0, "charts/env_steps_total": 0.0, **(start_metrics or evaluate(policy, 0))}
        if log_metrics:
            log_metrics({k: v for k, v in start_metrics.items() if k != "update"}, 0)
    result = train_rl(
        policy, reference, setup.pool, setup.env_factory or make_env, setup.rollout, config, method,
        seed=seed, checkpoint_dir=checkpoint_dir, evaluate=evaluate, log_metrics=log_metrics, parallel=parallel,
    )
    if evaluate_start:
        result.history = pd.concat([pd.DataFrame([start_metrics]), result.history], ignore_index=True)
    return result

"""One RL run set up from its parts: a private copy of the starting policy, its frozen KL
reference, the held-out evaluator, and ``train_rl``. The training pipeline runs one; the
experiment grid runs one per cell."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.evaluation.heldout import HeldoutConfig, evaluate_agents
from hindsight.evaluation.metrics import success_summary
from hindsight.rollout.engine import RolloutConfig
from hindsight.config import environment_specs
from hindsight.rollout.tasks import TaskRef, split_tasks
from hindsight.training.rl import RLRunResult, train_rl
from hindsight.training.rl_config import RLConfig

logger = logging.getLogger(__name__)


def training_tasks(environment: dict[str, Any], training: dict[str, Any], ingestion: dict[str, Any]) -> list[TaskRef]:
    """The RL training tasks: the first ``training.tasks_per_game`` train-fold seeds of each
    game (by default the same tasks the expert episodes came from)."""
    count = int(training.get("tasks_per_game") or (ingestion.get("expert_episodes") or {}).get("train", 100))
    return [task for spec in environment_specs(environment) for task in split_tasks(spec, "train", count)]


def skill_bank_from_table(skills: pd.DataFrame) -> dict[str, str]:
    """The fixed skill bank of the "without on-policy skills" ablation: the accepted Stage-1
    skill of each task (group_id), and per task type the most frequent accepted success
    skill as a fallback for tasks without one."""
    accepted = skills[skills["accepted"] & skills["parse_ok"]]
    bank: dict[str, str] = {}
    for group_id, group in accepted.groupby("group_id"):
        successes = group[group["success"]]
        bank[group_id] = (successes if len(successes) else group)["skill"].iloc[0]
    for task_type, group in accepted[accepted["success"]].groupby(accepted["group_id"].str.split("/").str[1]):
        bank.setdefault(task_type, group["skill"].mode().iloc[0])
    return bank


def weights_fingerprint(model) -> str:
    """A short hash of a model's weights (identifies a starting checkpoint's content)."""
    digest = hashlib.sha1()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()[:12]


def checkpoint_directory(root: str | Path, everything: dict[str, Any], start_model) -> Path:
    """Checkpoints of a run live under a fingerprint of its settings and starting weights:
    a killed run restarted with the same inputs resumes; changed inputs start afresh."""
    settings = json.dumps(everything, sort_keys=True, default=str)
    fingerprint = hashlib.sha1((settings + weights_fingerprint(start_model)).encode()).hexdigest()[:12]
    return Path(root) / fingerprint


def check_heldout_disjoint(heldout: HeldoutConfig, training_tasks_per_game: int) -> None:
    """Held-out "seen" tasks must lie after the training tasks in the train fold."""
    if "seen" in heldout.splits and heldout.seen_seed_offset < training_tasks_per_game:
        raise ValueError(
            f"evaluation.heldout.seen_seed_offset={heldout.seen_seed_offset} overlaps the {training_tasks_per_game} "
            "training tasks per game: held-out 'seen' tasks must never be trained on"
        )


@dataclass
class RLSetup:
    """What every RL run of a pipeline needs, read once from the parameter blocks."""

    specs: list[EnvironmentSpec]
    rollout: RolloutConfig
    heldout: HeldoutConfig
    pool: list[TaskRef]


def rl_setup(
    environment: dict[str, Any],
    rollout: dict[str, Any],
    prompt: dict[str, Any],
    reward: dict[str, Any],
    evaluation: dict[str, Any],
    training: dict[str, Any],
    ingestion: dict[str, Any],
    heldout_override: dict[str, Any] | None = None,
) -> RLSetup:
    """Environment specs, rollout and held-out settings and the training-task pool, with
    the check that held-out "seen" tasks were never trained on."""
    from hindsight.config import rollout_config

    specs = environment_specs(environment)
    heldout = HeldoutConfig.from_params({**(evaluation.get("heldout") or {}), **(heldout_override or {})})
    pool = training_tasks(environment, training, ingestion)
    check_heldout_disjoint(heldout, len(pool) // max(len(specs), 1))
    return RLSetup(specs=specs, rollout=rollout_config(rollout, prompt, reward, environment), heldout=heldout, pool=pool)


def frozen_copy(model):
    """A copy of ``model`` with gradients off, in eval mode (the KL reference)."""
    reference = copy.deepcopy(model).eval()
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    return reference


def heldout_evaluator(
    specs: Sequence[EnvironmentSpec], rollout: RolloutConfig, heldout: HeldoutConfig
) -> Callable[[object, int], dict[str, float]]:
    """``(policy, update) -> metrics``: success rate and episode count per held-out split and
    task type of the first decoding in ``heldout.decodings``."""
    first = next(iter(heldout.decodings))

    def evaluate(policy, update: int) -> dict[str, float]:
        steps = evaluate_agents(policy, specs, make_env, rollout, heldout, policy_label="policy", include_random=False)
        summary = success_summary(steps)
        metrics = {}
        for row in summary.itertuples(index=False):
            if row.agent == f"policy-{first}":
                metrics[f"eval/{row.eval_split}/{row.task_type}/success_rate"] = row.success_rate
                metrics[f"eval/{row.eval_split}/{row.task_type}/episodes"] = float(row.episodes)
        return metrics

    return evaluate


def run_rl(
    start_policy,
    config: RLConfig,
    tasks: Sequence[TaskRef],
    rollout: RolloutConfig,
    specs: Sequence[EnvironmentSpec],
    heldout: HeldoutConfig,
    checkpoint_dir: str | Path | None,
    skill_bank: dict[str, str] | None = None,
    log_metrics: Callable[[dict, int], None] | None = None,
    evaluate_start: bool = False,
    start_metrics: dict[str, float] | None = None,
) -> RLRunResult:
    """Train a private copy of ``start_policy`` (the caller's object is left untouched).

    Args:
        start_policy: The starting checkpoint; also the frozen KL reference.
        config: RL settings.
        tasks: The training-task list (``config.task_fraction`` of it is used).
        rollout: How episodes are played.
        specs: The environment specs (for held-out evaluation).
        heldout: Held-out evaluation settings.
        checkpoint_dir: Checkpoints (resumed when present).
        skill_bank: Fixed skills (ablation).
        log_metrics: ``(metrics, step)`` sink (MLflow).
        evaluate_start: Also evaluate the starting policy, logged as update 0 (learning curves).
        start_metrics: That evaluation when the caller already has it (the held-out tasks
            and seed are fixed, so it is the same for every run from one checkpoint).

    Returns:
        ``RLRunResult``; with ``evaluate_start`` the history's first row is update 0.
    """
    policy = copy.deepcopy(start_policy)
    reference = frozen_copy(start_policy.model)
    evaluate = heldout_evaluator(specs, rollout, heldout)
    if evaluate_start:
        start_metrics = {"update": 0, "charts/env_steps_total": 0.0, **(start_metrics or evaluate(policy, 0))}
        if log_metrics:
            log_metrics({k: v for k, v in start_metrics.items() if k != "update"}, 0)
    result = train_rl(
        policy, reference, tasks, make_env, rollout, config,
        checkpoint_dir=checkpoint_dir, skill_bank=skill_bank, evaluate=evaluate, log_metrics=log_metrics,
    )
    if evaluate_start:
        result.history = pd.concat([pd.DataFrame([start_metrics]), result.history], ignore_index=True)
    return result

"""Nodes of the training pipeline: set up and run ``hindsight.training.rl.train_rl``."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from hindsight import tracking  # noqa: E402
from hindsight.config import environment_specs, rollout_config  # noqa: E402
from hindsight.envs import make_env  # noqa: E402
from hindsight.evaluation.heldout import HeldoutConfig, evaluate_agents  # noqa: E402
from hindsight.evaluation.metrics import success_summary  # noqa: E402
from hindsight.rollout.tasks import TaskRef, split_tasks  # noqa: E402
from hindsight.training.rl import train_rl  # noqa: E402
from hindsight.training.rl_config import RLConfig  # noqa: E402

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


def _weights_fingerprint(model) -> str:
    digest = hashlib.sha1()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()[:12]


def checkpoint_directory(training: dict[str, Any], everything: dict[str, Any], start_model) -> Path:
    """Checkpoints of a run live under a fingerprint of its settings and starting weights:
    a killed run restarted with the same inputs resumes; changed inputs start afresh."""
    settings = json.dumps(everything, sort_keys=True, default=str)
    fingerprint = hashlib.sha1((settings + _weights_fingerprint(start_model)).encode()).hexdigest()[:12]
    return Path(training.get("checkpoint_root", "data/06_models/rl_checkpoints")) / fingerprint


def train_with_rl(
    warmup_policy,
    base_policy,
    skills: pd.DataFrame,
    algorithm: str,
    training: dict[str, Any],
    environment: dict[str, Any],
    rollout: dict[str, Any],
    prompt: dict[str, Any],
    reward: dict[str, Any],
    evaluation: dict[str, Any],
    ingestion: dict[str, Any],
):
    """Run the RL loop of ``algorithm`` (seed | grpo | gigpo | opid); return the policy.

    ``training.start_from`` picks the starting checkpoint: ``stage1`` (the warm-up
    checkpoint, default) or ``base`` (behaviour cloning only: the "without Stage 1"
    ablation). The starting checkpoint is also the frozen KL reference.

    Returns:
        (trained policy, per-update history, last rollout table, last skills table).
    """
    config = RLConfig.from_params({**(training.get("rl") or {}), "algorithm": algorithm})
    start = {"stage1": warmup_policy, "base": base_policy}.get(training.get("start_from", "stage1"))
    if start is None:
        raise ValueError(f"training.start_from must be 'stage1' or 'base', got {training.get('start_from')!r}")
    reference = copy.deepcopy(start.model).eval()
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    specs = environment_specs(environment)
    settings = rollout_config(rollout, prompt, reward, environment)
    heldout = HeldoutConfig.from_params({**(evaluation.get("heldout") or {}), **(training.get("heldout") or {})})

    def evaluate(policy, update: int) -> dict[str, float]:
        steps = evaluate_agents(policy, specs, make_env, settings, heldout, policy_label="policy", include_random=False)
        summary = success_summary(steps)
        return {
            f"eval/{row.eval_split}/{row.task_type}/success_rate": row.success_rate
            for row in summary.itertuples(index=False)
            if row.agent == "policy-sampled"
        }

    pool = training_tasks(environment, training, ingestion)
    per_game = len(pool) // max(len(environment_specs(environment)), 1)
    if "seen" in heldout.splits and heldout.seen_seed_offset < per_game:
        raise ValueError(
            f"evaluation.heldout.seen_seed_offset={heldout.seen_seed_offset} overlaps the {per_game} training "
            "tasks per game: held-out 'seen' tasks must never be trained on"
        )
    everything = dict(algorithm=algorithm, training=training, environment=environment, rollout=rollout, prompt=prompt, reward=reward, evaluation=heldout.__dict__)
    checkpoints = checkpoint_directory(training, everything, start.model)
    logger.info("RL (%s) checkpoints in %s", config.algorithm, checkpoints)
    torch.manual_seed(config.seed)
    result = train_rl(
        start,
        reference,
        pool,
        make_env,
        settings,
        config,
        checkpoint_dir=checkpoints,
        skill_bank=skill_bank_from_table(skills),
        evaluate=evaluate,
        log_metrics=lambda metrics, step: tracking.log_metrics(metrics, step=step),
    )
    result.policy.version = config.updates
    return result.policy, result.history, result.last_rollout, result.skills


def plot_training_curves(history: pd.DataFrame):
    """Rollout success, held-out success and the loss terms against environment steps."""
    figure, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    x = history["charts/env_steps_total"] if "charts/env_steps_total" in history else history["update"]
    axes[0].plot(x, 100 * history["rollout/success_rate"], marker="o", label="training rollouts")
    for column in [c for c in history.columns if c.startswith("eval/") and c.endswith("/all/success_rate")]:
        points = history[["charts/env_steps_total", column]].dropna()
        axes[0].plot(points.iloc[:, 0], 100 * points.iloc[:, 1], marker="s", label=column.split("/")[1] + " held-out")
    axes[0].set_ylabel("success %")
    axes[0].legend(fontsize=8)
    for column in [c for c in history.columns if c.startswith("losses/") and c != "losses/grad_norm"]:
        axes[1].plot(x, history[column], label=column)
    axes[1].legend(fontsize=8)
    axes[1].set_title("losses")
    for column in [c for c in ("opd/gate_mean", "opd/skill_parse_rate", "ppo/clipfrac", "kl/ref") if c in history]:
        axes[2].plot(x, history[column], label=column)
    axes[2].legend(fontsize=8)
    axes[2].set_title("SEED / PPO diagnostics")
    for axis in axes:
        axis.set_xlabel("environment steps")
    figure.tight_layout()
    return figure

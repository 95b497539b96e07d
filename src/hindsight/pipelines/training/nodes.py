"""Nodes of the training pipeline: set up and run one RL run (``hindsight.methods.run.run_rl``)."""

from __future__ import annotations

import logging

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hindsight import tracking  # noqa: E402
from hindsight.config import ProjectConfig, TrainingConfig, rl_setup  # noqa: E402
from hindsight.params import as_dict  # noqa: E402
from hindsight.policy import Policy  # noqa: E402
from hindsight.skills.skill_bank import skill_bank_from_table  # noqa: E402
from hindsight.methods.run import run_rl  # noqa: E402
from hindsight.training.checkpoint import checkpoint_directory

logger = logging.getLogger(__name__)


def train_with_rl(stage1_policy: Policy, base_policy: Policy, skills: pd.DataFrame, project: ProjectConfig, training: TrainingConfig):
    """Run the RL loop of the method ``training.rl.algorithm`` names; return the policy.

    ``training.start_from`` picks the starting checkpoint: ``stage1`` (default) or ``base``
    (behaviour cloning only: the "without Stage 1" ablation). The starting checkpoint is
    also the frozen KL reference.

    Returns:
        (trained policy, per-update history, last rollout table, last skills table).
    """
    start = {"stage1": stage1_policy, "base": base_policy}[training.start_from]
    setup = rl_setup(project, training)
    settings = {"project": as_dict(project), "training": as_dict(training)}
    checkpoints = checkpoint_directory(training.checkpoint_root, settings, start.model)
    logger.info("RL (%s) checkpoints in %s", training.rl.algorithm, checkpoints)
    tracking.take_over_checkpoints(checkpoints)  # a killed earlier run's MLflow record: KILLED
    result = run_rl(
        start, training.rl, setup, checkpoints,
        seed=project.seeds.rollouts,
        skill_bank=skill_bank_from_table(skills),
        log_metrics=lambda metrics, step: tracking.log_metrics(metrics, step=step),
    )
    result.policy.version = training.rl.updates
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

"""Nodes of the training pipeline: set up and run one RL run (``hindsight.runs.rl_run.run_rl``)."""

from __future__ import annotations

import logging

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hindsight import tracking  # noqa: E402
from hindsight.config import ProjectConfig, TrainingConfig, rl_setup  # noqa: E402
from hindsight.evaluation.curves import curve_points, decodings, draw_health, draw_heldout_curves  # noqa: E402
from hindsight.policy import Policy  # noqa: E402
from hindsight.skills.skill_bank import skill_bank_from_table  # noqa: E402
from hindsight.runs.rl_run import run_rl  # noqa: E402
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
    checkpoints = checkpoint_directory(training.checkpoint_root, {"project": project, "training": training}, start.model)
    logger.info("RL (%s) checkpoints in %s", training.rl.algorithm, checkpoints)
    tracking.take_over_checkpoints(checkpoints)  # a killed earlier run's MLflow record: KILLED
    result = run_rl(
        start, training.rl, setup, checkpoints,
        seed=project.seeds.rollouts,
        skill_bank=skill_bank_from_table(skills),
        log_metrics=lambda metrics, step: tracking.log_metrics(metrics, step=step),
        evaluate_start=bool(training.rl.eval_every),  # the held-out curve starts at update 0
    )
    result.policy.version = training.rl.updates
    return result.policy, result.history, result.last_rollout, result.skills


def plot_training_curves(history: pd.DataFrame):
    """The run on one figure (x: environment steps). Top row: per decoding, the held-out
    success with its Wilson 95% band per split, the training rollouts' success beside it
    (``evaluation.curves``), then SEED / PPO diagnostics. Bottom row: the loss terms and the
    run's health (shares; entropy, KL to start, gradient norm)."""
    points = curve_points(history)
    names = decodings(points) or [None]
    columns = max(3, len(names) + 1)
    figure, axes = plt.subplots(2, columns, figsize=(4.8 * columns, 7.2), squeeze=False)
    x = history["charts/env_steps_total"] if "charts/env_steps_total" in history else history["update"]
    for axis, name in zip(axes[0], names):
        if name is not None:
            draw_heldout_curves(axis, points, name)
        else:
            axis.set_title("held-out success: no points (training.rl.eval_every is 0)")
        if "rollout/success_rate" in history:
            axis.plot(x, 100 * history["rollout/success_rate"], marker="o", color="grey", alpha=0.6, label="training rollouts")
        axis.set_ylabel("success %")
        axis.legend(fontsize=8)
    diagnostics = axes[0][-1]
    for column in [c for c in ("opd/gate_mean", "opd/skill_parse_rate", "kl/ref") if c in history]:
        diagnostics.plot(x, history[column], label=column)
    diagnostics.set_title("SEED / PPO diagnostics" if diagnostics.lines else "SEED / PPO diagnostics: none logged")
    for axis in [*axes[0][len(names):-1], *axes[1][3:]]:
        axis.axis("off")
    for column in [c for c in history.columns if c.startswith("losses/") and c != "losses/grad_norm"]:
        axes[1][0].plot(x, history[column], label=column)
    axes[1][0].set_title("losses")
    draw_health(axes[1][1], axes[1][2], history.assign(env_steps=x), x="env_steps")
    for axis in axes.flat:
        axis.set_xlabel("environment steps")
        if axis.lines and axis.get_legend() is None:
            axis.legend(fontsize=8)
    figure.tight_layout()
    return figure

"""Nodes of the EMPO pipeline: a thin layer over ``hindsight.runs.empo_run``."""

from __future__ import annotations

import logging

import pandas as pd

from hindsight import tracking
from hindsight.config import EmpoConfig, ProjectConfig
from hindsight.params import as_dict
from hindsight.policy import Policy
from hindsight.runs.empo_run import EmpoSource, run_empo, semi_online_table
from hindsight.training.checkpoint import checkpoint_directory

logger = logging.getLogger(__name__)


def train_with_empo(base_policy: Policy, trajectories: pd.DataFrame, project: ProjectConfig, empo: EmpoConfig):
    """Train the behaviour-cloned policy with EMPO on the ingested expert trajectories.

    The ``source == "expert"`` episodes of ``trajectories`` (environment gold episodes and
    external files alike) are the environment: no simulator is built. A share of them is
    held out and scored semi-online before training, every ``empo.rl.eval_every`` updates
    and after the last.

    Args:
        base_policy: The starting checkpoint (also the frozen KL reference).
        trajectories: The ingested trajectory table.
        project: Shared settings (decoding, prompt, seed).
        empo: The EMPO settings.

    Returns:
        (trained policy, per-update history, last rollout table, semi-online evaluations).
    """
    source = EmpoSource.from_table(trajectories, empo, seed=project.seeds.rollouts)
    settings = {"project": as_dict(project), "empo": as_dict(empo)}
    checkpoints = checkpoint_directory(empo.checkpoint_root, settings, base_policy.model)
    logger.info("EMPO checkpoints in %s", checkpoints)
    result = run_empo(
        base_policy, source, project.rollout_config(), checkpoints,
        seed=project.seeds.rollouts,
        log_metrics=lambda metrics, step: tracking.log_metrics(metrics, step=step),
    )
    result.policy.version = empo.rl.updates
    evaluations = semi_online_table(result.history)
    first, last = evaluations.iloc[0], evaluations.iloc[-1]
    logger.info(
        "EMPO semi-online success %.3f -> %.3f, progress %.3f -> %.3f on %d held-out trajectories",
        first["semi_online/success_rate"], last["semi_online/success_rate"],
        first["semi_online/mean_progress"], last["semi_online/mean_progress"], int(last["semi_online/trajectories"]),
    )
    return result.policy, result.history, result.last_rollout, evaluations

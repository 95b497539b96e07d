"""Episode-level facts derived from the trajectory table, and the ingestion counts.

Success, length and return are never stored in the step table; they are computed here:
``summarize_episodes`` gives one row per episode (``EPISODE_SUMMARY_COLUMNS``) and
``ingestion_counts`` the figures an ingestion run logs to MLflow, under keys such as
``ingestion/episodes`` and ``ingestion/success_rate/twc``.
"""

from __future__ import annotations

import logging
import re

import pandas as pd

from hindsight.data.schema import EPISODE_SUMMARY_COLUMNS, empty_episode_summary

logger = logging.getLogger(__name__)

METRIC_PREFIX = "ingestion"
_METRIC_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


def summarize_episodes(trajectories: pd.DataFrame) -> pd.DataFrame:
    """One row per episode: ids, env, task type, split, source, length, return, success,
    invalid actions.

    Args:
        trajectories: A trajectory table (``validate_trajectories`` output or equivalent).

    Returns:
        The episode summary, episodes in order of first appearance.
    """
    if trajectories.empty:
        return empty_episode_summary()
    grouped = trajectories.groupby("episode_id", sort=False)
    summary = grouped.agg(
        group_id=("group_id", "first"),
        env=("env", "first"),
        task_type=("task_type", "first"),
        split=("split", "first"),
        source=("source", "first"),
        length=("step", "size"),
        total_reward=("reward", "sum"),
        success=("won", "any"),
        invalid_actions=("action_valid", lambda valid: int((~valid.astype(bool)).sum())),
    ).reset_index()
    summary = summary.rename(columns={"total_reward": "return"})
    summary = summary.astype(
        {"length": "int64", "return": "float64", "success": "bool", "invalid_actions": "int64"}
    )
    return summary[list(EPISODE_SUMMARY_COLUMNS)]


def metric_key(*parts: str) -> str:
    """An MLflow-safe metric key: ``ingestion/<parts joined by "/">`` (unsafe characters -> "_")."""
    return "/".join([METRIC_PREFIX, *(_METRIC_UNSAFE.sub("_", str(part)) for part in parts)])


def ingestion_counts(trajectories: pd.DataFrame) -> dict[str, float]:
    """The ingestion figures: episodes, steps, success rate, invalid-action rate, and per
    task type its episodes and success rate.

    Args:
        trajectories: A trajectory table.

    Returns:
        ``{"ingestion/episodes": ..., "ingestion/steps": ..., "ingestion/success_rate": ...,
        "ingestion/invalid_action_rate": ..., "ingestion/episodes/<task_type>": ...,
        "ingestion/success_rate/<task_type>": ...}``; rates are 0.0 for an empty table.
    """
    episodes = summarize_episodes(trajectories)
    steps = int(len(trajectories))
    counts = {
        metric_key("episodes"): float(len(episodes)),
        metric_key("steps"): float(steps),
        metric_key("success_rate"): float(episodes["success"].mean()) if len(episodes) else 0.0,
        metric_key("invalid_action_rate"): float(episodes["invalid_actions"].sum() / steps) if steps else 0.0,
    }
    for task_type, per_type in episodes.groupby("task_type", sort=True):
        counts[metric_key("episodes", task_type)] = float(len(per_type))
        counts[metric_key("success_rate", task_type)] = float(per_type["success"].mean())
    return counts

"""Summary figures of a rollout table (episode facts are derived here, never stored).

``episode_summary`` turns step rows into one row per episode (success = any(won), length,
return); ``rollout_stats`` gives the figures a rollout run reports: success rate, mean
steps, the invalid-action rate (steps the environment rejected) and the off-list rate
(actions not among the listed valid actions: what free generation gets wrong; always 0
under constrained decoding).
"""

from __future__ import annotations

import logging

import pandas as pd

logger = logging.getLogger(__name__)


def episode_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per episode: episode_id, group_id, task_type, split, success, length, return."""
    if table.empty:
        return pd.DataFrame(columns=["episode_id", "group_id", "task_type", "split", "success", "length", "return"])
    grouped = table.groupby("episode_id", sort=False)
    return pd.DataFrame(
        {
            "group_id": grouped["group_id"].first(),
            "task_type": grouped["task_type"].first(),
            "split": grouped["split"].first(),
            "success": grouped["won"].any(),
            "length": grouped["step"].count(),
            "return": grouped["reward"].sum(),
        }
    ).reset_index()


def rollout_stats(table: pd.DataFrame) -> dict[str, float]:
    """Success rate, mean steps and action-validity figures of a trajectory table.

    Args:
        table: Step rows with at least episode_id, group_id, task_type, split, step, won,
            reward, action, valid_actions, action_valid.

    Returns:
        ``episodes``, ``success_rate``, ``mean_steps``, ``mean_return``, ``steps``,
        ``invalid_action_rate``, ``off_list_action_rate``.
    """
    episodes = episode_summary(table)
    steps = len(table)
    if steps:
        off_list = sum(action not in set(valid) for action, valid in zip(table["action"], table["valid_actions"]))
        invalid = float((~table["action_valid"].astype(bool)).mean())
    else:
        off_list, invalid = 0, 0.0
    return {
        "episodes": float(len(episodes)),
        "success_rate": float(episodes["success"].mean()) if len(episodes) else 0.0,
        "mean_steps": float(episodes["length"].mean()) if len(episodes) else 0.0,
        "mean_return": float(episodes["return"].mean()) if len(episodes) else 0.0,
        "steps": float(steps),
        "invalid_action_rate": invalid,
        "off_list_action_rate": off_list / steps if steps else 0.0,
    }

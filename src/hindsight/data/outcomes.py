"""Episode-level facts derived from the trajectory table, and the ingestion counts.

Success, length and return are never stored in the step table; they are computed here, and
only here: ``episode_outcomes`` gives what each episode achieved (``EPISODE_OUTCOME_COLUMNS``:
success = any step won, length, return = sum of step rewards, invalid actions), grouped by
any further columns a caller needs (agent, split, ...); ``summarize_episodes`` adds the
episode's identity (``EPISODE_SUMMARY_COLUMNS``); ``ingestion_counts`` gives the figures an
ingestion run logs to MLflow, under keys such as ``ingestion/episodes`` and
``ingestion/success_rate/twc``.
"""

from __future__ import annotations

import logging
import re
from typing import Sequence

import pandas as pd

from hindsight.data.schema import (
    EPISODE_OUTCOME_COLUMNS,
    EPISODE_SUMMARY_COLUMNS,
    Column,
    empty_episode_summary,
    typed_table,
)

logger = logging.getLogger(__name__)

METRIC_PREFIX = "ingestion"
_METRIC_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


def episode_outcomes(steps: pd.DataFrame, keys: Sequence[str] = ()) -> pd.DataFrame:
    """One row per episode: the ``keys`` columns, ``episode_id`` and its outcome.

    An episode is identified by its ``keys`` and its id together, so two agents that played
    the same episode ids (the same tasks) stay two episodes. Columns that are constant within
    an episode (``group_id``, ``task_type``, ...) may be given as keys to carry them along.

    Args:
        steps: Step rows with at least ``episode_id``, ``step``, ``reward``, ``won`` and
            ``action_valid`` (a trajectory or rollout table, optionally with more columns).
        keys: Further grouping columns, placed first.

    Returns:
        Columns ``[*keys, "episode_id", *EPISODE_OUTCOME_COLUMNS]``, episodes in order of
        first appearance: success = any ``won``, length = number of steps, return = sum of
        ``reward``, invalid_actions = steps with ``action_valid`` False.
    """
    columns = {name: Column("str", "grouping key") for name in [*keys, "episode_id"]} | EPISODE_OUTCOME_COLUMNS
    if steps.empty:
        return typed_table([], columns)
    grouped = steps.assign(invalid_action=~steps["action_valid"].astype(bool)).groupby(
        [*keys, "episode_id"], sort=False, dropna=False
    )
    outcomes = grouped.agg(
        success=("won", "any"),
        length=("step", "size"),
        total_reward=("reward", "sum"),
        invalid_actions=("invalid_action", "sum"),
    ).reset_index()
    return typed_table(outcomes.rename(columns={"total_reward": "return"}), columns)


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
    outcome_columns = {"episode_id", *EPISODE_OUTCOME_COLUMNS}
    identity = [name for name in EPISODE_SUMMARY_COLUMNS if name not in outcome_columns]
    # The identity columns are constant within an episode (validate_trajectories checks it),
    # so grouping by them as well keeps one row per episode and carries them along.
    return episode_outcomes(trajectories, identity)[list(EPISODE_SUMMARY_COLUMNS)]


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

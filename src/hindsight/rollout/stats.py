"""Summary figures of a rollout table.

Episode facts (success = any(won), length, return) come from
``hindsight.data.outcomes.episode_outcomes``; ``rollout_stats`` gives the figures a rollout
run reports: success rate, mean steps, the invalid-action rate (steps the environment rejected) and the off-list rate
(actions not among the listed valid actions: what free generation gets wrong; always 0
under constrained decoding). ``rollout_metrics`` adds the ``faults/...`` counts of the
rollout (failed episodes, their rate, step timeouts, environment restarts; ``faults``),
which ``run_rollouts`` leaves in the table's ``attrs``, and the run's health that a rollout
shows: ``health/zero_variance_group_share`` (``zero_variance_group_share``), the share of
groups whose episodes all got the same return, which give a group-relative method no signal.
"""

from __future__ import annotations

import logging
from typing import Mapping

import pandas as pd

from hindsight import algorithms
from hindsight.data.outcomes import episode_outcomes

FAULTS_ATTR = "faults"
"""``DataFrame.attrs`` key of a rollout table holding its ``faults/...`` counts."""
ENGINE_ATTR = "engine"
"""``DataFrame.attrs`` key of a rollout table holding the engine's ``rollout/...`` counts
(``rollout/context_reprefills``: multi-turn contexts truncated and read again;
``rollout/weight_sync_s``: seconds the inference backend took to bring the weights in)."""

logger = logging.getLogger(__name__)


def rollout_stats(table: pd.DataFrame) -> dict[str, float]:
    """Success rate, mean steps and action-validity figures of a trajectory table.

    Args:
        table: Step rows with at least episode_id, step, won, reward, action, valid_actions,
            action_valid.

    Returns:
        ``episodes``, ``success_rate``, ``mean_steps``, ``mean_return``, ``steps``,
        ``invalid_action_rate``, ``off_list_action_rate``.
    """
    episodes = episode_outcomes(table)
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


def rollout_metrics(table: pd.DataFrame, faults: Mapping[str, float] | None = None, simulated: bool = False) -> dict[str, float]:
    """The ``rollout/...`` metrics the RL loop logs per update (episodes in id order), and
    the rollout's ``faults/...`` counts.

    Args:
        table: The rollout table.
        faults: ``RolloutFaults.metrics()`` of the rollout; None: the ones ``run_rollouts``
            left in ``table.attrs`` (none for a table from elsewhere).
        simulated: The steps were played in a world model (WM-R1), not the environment:
            ``rollout/env_steps`` and ``rollout/env_episodes`` are 0 (WM-R1 counts them as
            ``world_model/simulated_steps``).
    """
    episodes = episode_outcomes(table).sort_values("episode_id")
    metrics = {
        "rollout/success_rate": float(episodes["success"].mean()),
        "rollout/mean_return": float(episodes["return"].mean()),
        "rollout/mean_steps": float(episodes["length"].mean()),
        "rollout/invalid_action_rate": float(1 - table["action_valid"].mean()),
        "rollout/env_steps": 0.0 if simulated else float(len(table)),
        "rollout/env_episodes": 0.0 if simulated else float(len(episodes)),
    }
    share = zero_variance_group_share(table)
    if share is not None:
        metrics["health/zero_variance_group_share"] = share
    metrics.update(faults if faults is not None else table.attrs.get(FAULTS_ATTR, {}))
    metrics.update(table.attrs.get(ENGINE_ATTR, {}))
    return metrics


def zero_variance_group_share(table: pd.DataFrame) -> float | None:
    """The share of the table's groups (``group_id``: the episodes of one task in one update)
    whose episode returns are all equal (``algorithms.zero_variance_groups``; a group of one
    episode counts): all won or all lost alike, so their group-relative advantages are 0.
    None when the table has no episodes or no ``group_id``."""
    if table.empty or "group_id" not in table.columns:
        return None
    outcomes = episode_outcomes(table, keys=["group_id"])
    constant = algorithms.zero_variance_groups(outcomes["return"].tolist(), outcomes["group_id"].tolist())
    return len(constant) / outcomes["group_id"].nunique()

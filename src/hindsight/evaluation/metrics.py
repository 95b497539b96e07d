"""Success rates with 95% intervals, per agent, split and task type, from episode tables.

Input is a trajectory table (one row per step) with extra columns naming who played
(``agent``: e.g. "policy-sampled", "policy-greedy", "random") and on which held-out split
(``eval_split``: "seen" or "unseen"). Everything here is derived from those rows, episode
outcomes by ``hindsight.data.outcomes.episode_outcomes`` (one episode per agent, split and id).
"""

from __future__ import annotations

import math

import pandas as pd

from hindsight.data.outcomes import episode_outcomes

SUMMARY_COLUMNS = [
    "agent", "eval_split", "task_type", "episodes", "successes", "success_rate",
    "ci_low", "ci_high", "mean_steps", "invalid_action_rate",
]


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% for z = 1.96).

    Returns (0, 1) for zero trials. Unlike the normal approximation it stays inside [0, 1]
    and is sensible at 0 or all successes, which small evaluation sets often give.
    """
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def success_summary(steps: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Success rate with its 95% Wilson interval, mean steps and invalid-action rate.

    Args:
        steps: Step rows (a trajectory table) with ``agent``, ``eval_split`` and
            ``task_type`` columns.
        by: Grouping columns (default agent, eval_split, task_type); an "all" row per
            (agent, eval_split) averages over task types.

    Returns:
        A table with the ``SUMMARY_COLUMNS``.
    """
    by = by or ["agent", "eval_split", "task_type"]
    outcomes = episode_outcomes(steps, by)
    rows = []

    def summarize(group: pd.DataFrame, labels: dict) -> dict:
        trials, successes = len(group), int(group["success"].sum())
        low, high = wilson_interval(successes, trials)
        total_steps = int(group["length"].sum())
        return {
            **labels,
            "episodes": trials,
            "successes": successes,
            "success_rate": successes / trials if trials else float("nan"),
            "ci_low": low,
            "ci_high": high,
            "mean_steps": group["length"].mean(),
            "invalid_action_rate": group["invalid_actions"].sum() / max(total_steps, 1),
        }

    for labels, group in outcomes.groupby(by, sort=True):
        rows.append(summarize(group, dict(zip(by, labels))))
    if "task_type" in by:
        outer = [column for column in by if column != "task_type"]
        for labels, group in outcomes.groupby(outer, sort=True):
            labels = labels if isinstance(labels, tuple) else (labels,)
            rows.append(summarize(group, {**dict(zip(outer, labels)), "task_type": "all"}))
    table = pd.DataFrame(rows)
    return table[[c for c in SUMMARY_COLUMNS if c in table.columns]].sort_values(by).reset_index(drop=True)


def percent_interval(value: float, low: float, high: float) -> str:
    """A rate and its 95% interval as a table cell: ``"37.5 (12.0-70.1)"`` (percent)."""
    return f"{100 * value:.1f} ({100 * low:.1f}-{100 * high:.1f})"

"""Episodes as the skill teachers see them, built from the trajectory table.

``episodes_from_table`` groups the table's rows (one per step sample, columns in
``hindsight.data.schema.TRAJECTORY_COLUMNS``) by ``episode_id`` and orders them by ``step``.
Episode facts come from ``hindsight.data.outcomes.episode_outcomes``, not from stored
columns: success = any(won), or, when a return threshold is given, sum(reward) >= threshold;
a table without ``reward`` counts every step as 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from hindsight.data.outcomes import episode_outcomes

REQUIRED_COLUMNS = ("episode_id", "group_id", "task", "step", "observation", "action", "response", "action_valid", "won")


@dataclass(frozen=True)
class StepView:
    """One step of an episode: what the agent saw and did, and what it led to."""

    step: int
    observation: str
    anchor_observation: str
    action: str
    response: str
    action_valid: bool
    reward: float
    score: float | None
    won: bool


@dataclass(frozen=True)
class EpisodeView:
    """One finished episode: its identity, task text, outcome and steps in order."""

    episode_id: str
    group_id: str
    task: str
    success: bool
    steps: tuple[StepView, ...]
    task_type: str = ""

    @property
    def episode_return(self) -> float:
        """Sum of the step rewards."""
        return float(sum(step.reward for step in self.steps))

    def analysis_steps(self) -> list[dict[str, Any]]:
        """The steps in the form ``build_analysis_prompt`` takes."""
        return [
            {"observation": step.observation, "response": step.response, "action_valid": step.action_valid}
            for step in self.steps
        ]


def _optional(row: Any, column: str, default: Any) -> Any:
    value = getattr(row, column, default)
    try:
        if pd.isna(value):
            return default
    except (TypeError, ValueError):  # lists / arrays are not NA
        pass
    return value


def episodes_from_table(
    trajectories: pd.DataFrame, *, success_return_threshold: float | None = None, source: str = "trajectory table"
) -> list[EpisodeView]:
    """Group a trajectory table into episodes.

    Args:
        trajectories: The trajectory table (one row per step sample).
        success_return_threshold: If given, an episode succeeds when its summed reward is at
            least this; otherwise when any of its steps has ``won``.
        source: Name of the table for error messages (e.g. its file path).

    Returns:
        The episodes in order of first appearance, steps sorted by ``step``.
    """
    missing = [column for column in REQUIRED_COLUMNS if column not in trajectories.columns]
    if missing:
        raise ValueError(f"{source}: missing column(s) {', '.join(missing)}")
    with_reward = trajectories if "reward" in trajectories.columns else trajectories.assign(reward=0.0)
    outcomes = episode_outcomes(with_reward).set_index("episode_id")
    episodes: list[EpisodeView] = []
    for episode_id, rows in trajectories.groupby("episode_id", sort=False):
        rows = rows.sort_values("step", kind="stable")
        steps = []
        for position, row in zip(rows.index, rows.itertuples(index=False)):
            for column in ("observation", "action", "response"):
                if not isinstance(getattr(row, column), str):
                    raise ValueError(
                        f"{source}: row {position} (episode {episode_id!r}) field {column!r} must be text, "
                        f"got {type(getattr(row, column)).__name__}"
                    )
            score = _optional(row, "score", None)
            steps.append(
                StepView(
                    step=int(row.step),
                    observation=row.observation,
                    anchor_observation=str(_optional(row, "anchor_observation", "") or row.observation),
                    action=row.action,
                    response=row.response,
                    action_valid=bool(row.action_valid),
                    reward=float(_optional(row, "reward", 0.0)),
                    score=None if score is None else float(score),
                    won=bool(row.won),
                )
            )
        first, outcome = rows.iloc[0], outcomes.loc[episode_id]
        if success_return_threshold is None:
            success = outcome["success"]
        else:
            success = outcome["return"] >= success_return_threshold
        episodes.append(
            EpisodeView(
                episode_id=str(episode_id),
                group_id=str(first["group_id"]),
                task=str(first["task"]),
                success=bool(success),
                steps=tuple(steps),
                task_type=str(first.get("task_type", "") or ""),
            )
        )
    return episodes

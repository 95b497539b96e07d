"""Per-task pass-rate estimates (``PassRates``), the state every task draw reads
(``rollout.curriculum``: STEPO's calibration band and the curriculum) and the curriculum's
positive replay (``training.positive_replay``).

``PassRates`` keeps, per task (``group_id``), the episodes played, the episodes won and an
exponential moving average of the success rate of its groups: the first group sets the
estimate, each later group moves it by ``smoothing`` towards that group's rate. It also
keeps the latest won episode of every real task (``successes``: rows of the rollout table
with their recorded log-probs) and the last update's declare-action figures. It is part of
the RL checkpoint (``state_dict`` / ``load_state_dict``), so a resumed run draws the same
tasks as an uninterrupted one. Its one setting is
``training.rl.schedulers.pass_rates.smoothing`` (``PassRateSettings``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from hindsight.data.outcomes import episode_outcomes
from hindsight.envs.infeasible import DECLARE_ACTION, is_infeasible_group


@dataclass
class TaskRecord:
    """What is known about one task's pass rate."""

    episodes: int = 0
    """Episodes of it played so far."""
    wins: int = 0
    """Of those, won."""
    estimate: float | None = None
    """Moving average of its groups' success rates (None: never played)."""


@dataclass
class PassRateSettings:
    """The pass-rate estimates the task draws read (``training.rl.schedulers.pass_rates``)."""

    smoothing: float = 0.5
    """Weight of the newest group's success rate in a task's pass-rate estimate (EMA)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.smoothing <= 1.0:
            raise ValueError(
                f"training.rl.schedulers.pass_rates.smoothing must be in (0, 1] (0 would never update an estimate), got {self.smoothing}"
            )


class PassRates:
    """Per-task pass-rate estimates, updated from each update's rollout table."""

    def __init__(self, smoothing: float = 0.5) -> None:
        self.smoothing = PassRateSettings(smoothing).smoothing  # checked as the setting is
        self.records: dict[str, TaskRecord] = {}
        self.successes: dict[str, list[dict[str, Any]]] = {}
        """Per real task: the rows of its latest won episode (difficult positive replay)."""
        self.declared: dict[str, float] = {}
        """The last observed update's declare-action figures (``declared_metrics``)."""

    def estimate(self, group_id: str) -> float | None:
        """The task's current estimate (None: never played)."""
        record = self.records.get(group_id)
        return None if record is None else record.estimate

    def record(self, group_id: str) -> TaskRecord:
        """The task's record (an empty one if never played)."""
        return self.records.get(group_id, TaskRecord())

    def observe(self, table: pd.DataFrame) -> None:
        """Fold one update's episodes into the estimates: one group per task (its rows
        may come from several rollout rounds), in sorted ``group_id`` order."""
        if table.empty:
            return
        outcomes = episode_outcomes(table, keys=["group_id"])
        self.declared = declared_metrics(table)
        self.store_successes(table, outcomes)
        for group_id, group in sorted(outcomes.groupby("group_id", sort=False), key=lambda item: str(item[0])):
            record = self.records.setdefault(str(group_id), TaskRecord())
            wins = int(group["success"].sum())
            rate = wins / len(group)
            record.episodes += len(group)
            record.wins += wins
            if record.estimate is None:
                record.estimate = rate
            else:
                record.estimate = (1.0 - self.smoothing) * record.estimate + self.smoothing * rate

    def store_successes(self, table: pd.DataFrame, outcomes: pd.DataFrame) -> None:
        """Keep each real task's latest won episode (its rows, as plain records)."""
        won = outcomes[outcomes["success"].astype(bool) & ~outcomes["group_id"].map(is_infeasible_group)]
        for group_id, episodes in won.groupby("group_id", sort=True):
            rows = table[table["episode_id"] == sorted(episodes["episode_id"])[-1]].sort_values("step")
            self.successes[str(group_id)] = rows.to_dict("records")

    def summary(self) -> dict[str, float]:
        """``tasks/seen`` (tasks played so far) and ``tasks/pass_rate_mean`` over them."""
        seen = [r.estimate for r in self.records.values() if r.estimate is not None]
        return {"tasks/seen": float(len(seen)), "tasks/pass_rate_mean": sum(seen) / len(seen) if seen else 0.0}

    def state_dict(self) -> dict[str, Any]:
        """Plain, picklable state (for the checkpoint)."""
        return {
            "smoothing": self.smoothing,
            "records": {key: (r.episodes, r.wins, r.estimate) for key, r in self.records.items()},
            "successes": {key: [dict(row) for row in rows] for key, rows in self.successes.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        self.smoothing = float(state["smoothing"])
        self.records = {key: TaskRecord(int(n), int(w), e) for key, (n, w, e) in state["records"].items()}
        self.successes = {key: [dict(row) for row in rows] for key, rows in state.get("successes", {}).items()}


def declared_metrics(table: pd.DataFrame) -> dict[str, float]:
    """``curriculum/infeasible_declared_rate`` and ``curriculum/feasible_declared_rate``: the
    share of episodes, on infeasible variants and on real tasks offering the action, that
    ended by declaring the task infeasible (nothing when no episode could declare)."""
    if "action" not in table.columns or table.empty:
        return {}
    last = table.sort_values(["episode_id", "step"]).groupby("episode_id", sort=False).tail(1)
    declared = last["action"].astype(str).str.strip().str.lower() == DECLARE_ACTION
    infeasible = last["group_id"].map(is_infeasible_group).astype(bool)
    metrics = {}
    if infeasible.any():
        metrics["curriculum/infeasible_declared_rate"] = float(declared[infeasible].mean())
        metrics["curriculum/feasible_declared_rate"] = float(declared[~infeasible].mean()) if (~infeasible).any() else 0.0
    return metrics

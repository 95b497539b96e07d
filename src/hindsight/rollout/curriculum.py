"""Which tasks an RL update plays: per-task pass-rate estimates and the task schedulers that
read them (STEPO pass-rate calibration and a curriculum; docs/fidelity.md, "The schedulers").

The details of STEPO and of EvoCUA's curriculum are not public; what follows is our
reading, and docs/fidelity.md says so.

- ``PassRates`` keeps, per task (``group_id``), the episodes played, the episodes won and
  an exponential moving average of the success rate of its groups: the first group sets
  the estimate, each later group moves it by ``smoothing`` towards that group's rate. It is
  part of the RL checkpoint (``state_dict`` / ``load_state_dict``), so a resumed run draws
  the same tasks as an uninterrupted one.
  Its one setting is ``training.rl.schedulers.pass_rates.smoothing`` (``PassRateSettings``).
The draws are ``TaskDraw`` objects with one interface (``draw``, ``summary``), chosen from
the settings by ``task_draw``:

- ``uniform``: ``rollout.tasks.sample_update_tasks``, the plain loop's draw.
- ``calibrated`` (STEPO): only tasks whose estimate lies strictly inside ``(low, high)``;
  a task never played counts as inside (nothing is known yet). Estimates only change when
  a task is played, so a task outside the band would stay there for ever: when fewer than
  ``count`` tasks are inside, the draw is filled up from the others at random (re-probing
  them), and the metrics say how many.
- ``curriculum`` (settings ``training.rl.schedulers.curriculum``, ``CurriculumSettings``):
  each task of the pool falls in one bucket,
    * unsolved: played, never won;
    * hard success: won at least once, estimate <= ``hard_threshold`` (includes a task the
      policy used to solve and has since forgotten);
    * mastered: estimate 1 (every group won every episode);
    * learnable: the rest, and every task never played;
  and a fifth bucket, infeasible, holds the generated infeasible variants of the pool's
  tasks (``envs.infeasible``: the goal names an object absent from the game; the right
  answer is the action ``declare infeasible``). An update draws ``infeasible_share * count``
  infeasible variants, ``replay_share * count`` hard successes (each rounded up or down at
  random, in proportion to its fraction, so the shares hold on average even when ``count``
  is small) and learnable ones for the rest; a bucket that runs short is filled from the
  others in the order learnable, unsolved, hard success, mastered. With an infeasible
  share above 0 every feasible task drawn offers the declare action too (a failure there),
  so its presence does not tell the policy which tasks are infeasible.
  Difficult positive replay (EvoCUA; the mechanics are our reading): ``PassRates`` keeps
  the latest won episode of every pool task (``successes``, rows of the rollout table with
  their recorded log-probs, checkpointed with the estimates), and each hard-success group
  of the batch swaps one rollout for it (``training.positive_replay``).

Every draw is a deterministic function of (seed, update, round, estimates).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import pandas as pd

from hindsight.data.outcomes import episode_outcomes
from hindsight.envs.infeasible import DECLARE_ACTION, declare_offered_spec, infeasible_spec, is_infeasible_group
from hindsight.rollout.tasks import TaskRef, sample_update_tasks

MASTERED_ABOVE = 1.0 - 1e-9
"""An estimate at or above this counts as 1 (every episode won)."""
BUCKETS = ("learnable", "unsolved", "hard_success", "mastered", "infeasible")
"""Curriculum buckets (metrics ``curriculum/<bucket>_drawn`` and ``_pool``)."""
FILL_ORDER = ("learnable", "unsolved", "hard_success", "mastered")
"""The buckets of real tasks, in the order a short bucket is filled from."""


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


@dataclass
class CurriculumSettings:
    """The task curriculum (``training.rl.schedulers.curriculum``; module docstring)."""

    enabled: bool = False
    """Mix learnable tasks, hard successes (with their stored successes replayed) and a
    share of generated infeasible tasks instead of a uniform draw."""
    infeasible_share: float = 0.125
    """Share drawn from generated infeasible variants of the pool's tasks (the goal names an
    absent object; ``envs.infeasible``); above 0, every task drawn offers the action
    ``declare infeasible``."""
    replay_share: float = 0.25
    """Share drawn from hard successes (solved once, estimate <= ``hard_threshold``)."""
    hard_threshold: float = 0.25
    """A solved task whose pass-rate estimate is at most this counts as hard."""
    positive_replay: bool = True
    """Difficult positive replay: each hard-success group swaps one rollout for its task's
    stored won episode (``training.positive_replay``)."""
    replay_weight_cap: float | None = None
    """Positive replay: upper bound of the decoupled-PPO weight pi_prox / pi_behav on the
    replayed samples (None: no cap)."""

    def __post_init__(self) -> None:
        shares = (self.infeasible_share, self.replay_share)
        if min(shares) < 0 or sum(shares) > 1:
            raise ValueError(
                "training.rl.schedulers.curriculum.infeasible_share and replay_share must be >= 0 and sum to at most 1, "
                f"got {shares}"
            )
        if not 0.0 <= self.hard_threshold <= 1.0:
            raise ValueError(f"training.rl.schedulers.curriculum.hard_threshold must be in [0, 1], got {self.hard_threshold}")
        if self.replay_weight_cap is not None and self.replay_weight_cap <= 0:
            raise ValueError(f"training.rl.schedulers.curriculum.replay_weight_cap must be > 0 or null, got {self.replay_weight_cap}")


class PassRates:
    """Per-task pass-rate estimates, updated from each update's rollout table."""

    def __init__(self, smoothing: float = 0.5) -> None:
        if not 0.0 < smoothing <= 1.0:
            raise ValueError(f"PassRates: smoothing must be in (0, 1], got {smoothing}")
        self.smoothing = smoothing
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


def curriculum_bucket(record: TaskRecord, hard_threshold: float) -> str:
    """Which curriculum bucket a task is in (see the module docstring)."""
    if record.estimate is None:
        return "learnable"
    if record.wins == 0:
        return "unsolved"
    if record.estimate >= MASTERED_ABOVE:
        return "mastered"
    if record.estimate <= hard_threshold:
        return "hard_success"
    return "learnable"


def in_band(estimate: float | None, band: tuple[float, float]) -> bool:
    """Whether a task is inside the calibration band (never played: inside)."""
    return estimate is None or band[0] < estimate < band[1]


def calibrated_draw(
    pool: Sequence[TaskRef], rates: PassRates, count: int, band: tuple[float, float], rng: random.Random
) -> tuple[list[TaskRef], dict[str, float]]:
    """STEPO pass-rate calibration: ``count`` tasks from inside the band, filled up from
    outside it when too few are inside.

    Returns:
        (the tasks, ``stepo/calibration_in_band`` and ``stepo/calibration_out_of_band``
        drawn, ``stepo/calibration_pool_in_band`` tasks of the pool inside).
    """
    inside = [task for task in pool if in_band(rates.estimate(task.group_id), band)]
    outside = [task for task in pool if not in_band(rates.estimate(task.group_id), band)]
    chosen = rng.sample(inside, min(count, len(inside)))
    filled = rng.sample(outside, min(count - len(chosen), len(outside)))
    metrics = {
        "stepo/calibration_in_band": float(len(chosen)),
        "stepo/calibration_out_of_band": float(len(filled)),
        "stepo/calibration_pool_in_band": float(len(inside)),
    }
    return chosen + filled, metrics


def share_count(share: float, count: int, rng: random.Random) -> int:
    """``share * count`` rounded down, plus one with probability its fractional part."""
    whole = int(share * count)
    return whole + int(rng.random() < share * count - whole)


def curriculum_draw(
    pool: Sequence[TaskRef],
    rates: PassRates,
    count: int,
    rng: random.Random,
    *,
    infeasible_share: float,
    replay_share: float,
    hard_threshold: float,
    exclude: Iterable[str] = (),
) -> tuple[list[TaskRef], dict[str, float]]:
    """The curriculum's mix of ``count`` tasks of ``pool`` and infeasible variants of them
    whose ``group_id`` is not in ``exclude`` (see the module docstring).

    Returns:
        (the tasks, ``curriculum/<bucket>_drawn`` and ``curriculum/<bucket>_pool`` per bucket).
    """
    buckets: dict[str, list[TaskRef]] = {name: [] for name in BUCKETS}
    for task in pool:
        buckets[curriculum_bucket(rates.record(task.group_id), hard_threshold)].append(task)
    count = min(count, len(pool))
    infeasible = share_count(infeasible_share, count, rng)
    wanted = {"hard_success": min(share_count(replay_share, count, rng), count - infeasible)}
    wanted["learnable"] = count - infeasible - wanted["hard_success"]
    drawn: dict[str, list[TaskRef]] = {name: [] for name in BUCKETS}
    for name in ("learnable", "hard_success"):
        drawn[name] = rng.sample(buckets[name], min(wanted[name], len(buckets[name])))
    for name in FILL_ORDER:  # fill what a short bucket left open
        short = count - infeasible - sum(len(tasks) for tasks in drawn.values())
        if short <= 0:
            break
        left = [task for task in buckets[name] if task not in drawn[name]]
        drawn[name] += rng.sample(left, min(short, len(left)))
    variants = [TaskRef(infeasible_spec(task.spec), task.seed, task.split) for task in pool]
    buckets["infeasible"] = [task for task in variants if task.group_id not in set(exclude)]
    drawn["infeasible"] = rng.sample(buckets["infeasible"], min(infeasible, len(buckets["infeasible"])))
    metrics = {}
    for name in BUCKETS:
        metrics[f"curriculum/{name}_drawn"] = float(len(drawn[name]))
        metrics[f"curriculum/{name}_pool"] = float(len(buckets[name]))
    feasible = [task for name in FILL_ORDER for task in drawn[name]]
    if infeasible_share > 0:  # the declare action on every task, so its presence tells nothing
        feasible = [TaskRef(declare_offered_spec(task.spec), task.seed, task.split) for task in feasible]
    return feasible + drawn["infeasible"], metrics


class TaskDraw:
    """Which tasks a rollout round plays: the uniform draw (the plain loop's); the subclasses
    read the pass-rate estimates."""

    name = "uniform"

    def draw(
        self, pool: Sequence[TaskRef], rates: PassRates, count: int, seed: int, update: int,
        *, round_index: int = 0, exclude: Iterable[str] = (),
    ) -> tuple[list[TaskRef], dict[str, float]]:
        """``count`` tasks of ``pool`` not in ``exclude`` (``group_id``), and the draw's metrics.

        Args:
            pool: The training tasks.
            rates: The current estimates.
            count: How many tasks.
            seed: The run's seed.
            update: The update index.
            round_index: 0 for the update's first round; STEPO's refill rounds count up.
            exclude: ``group_id`` of tasks already played in this update.

        Round 0 of the uniform draw is exactly ``sample_update_tasks(pool, count, seed, update)``.
        """
        excluded = set(exclude)
        if round_index == 0 and not excluded:
            return sample_update_tasks(pool, count, seed, update), {}
        candidates = [task for task in pool if task.group_id not in excluded]
        return round_rng(seed, update, round_index).sample(candidates, min(count, len(candidates))), {}

    def summary(self, rates: PassRates) -> dict[str, float]:
        """What the draw reports of the estimates after an update (nothing: it reads none)."""
        return {}


class PassRateBand(TaskDraw):
    """STEPO pass-rate calibration (``calibrated_draw``)."""

    name = "pass_rate_band"

    def __init__(self, band: tuple[float, float]) -> None:
        self.band = (float(band[0]), float(band[1]))

    def draw(self, pool, rates, count, seed, update, *, round_index=0, exclude=()):
        excluded = set(exclude)
        candidates = [task for task in pool if task.group_id not in excluded]
        return calibrated_draw(candidates, rates, count, self.band, round_rng(seed, update, round_index))

    def summary(self, rates: PassRates) -> dict[str, float]:
        return rates.summary()


class Curriculum(TaskDraw):
    """The curriculum's buckets (``curriculum_draw``)."""

    name = "curriculum"

    def __init__(self, infeasible_share: float, replay_share: float, hard_threshold: float) -> None:
        self.infeasible_share, self.replay_share, self.hard_threshold = infeasible_share, replay_share, hard_threshold

    def draw(self, pool, rates, count, seed, update, *, round_index=0, exclude=()):
        excluded = set(exclude)
        candidates = [task for task in pool if task.group_id not in excluded]
        return curriculum_draw(
            candidates, rates, count, round_rng(seed, update, round_index),
            infeasible_share=self.infeasible_share, replay_share=self.replay_share, hard_threshold=self.hard_threshold,
            exclude=excluded,
        )

    def summary(self, rates: PassRates) -> dict[str, float]:
        return {**rates.summary(), **rates.declared}


def round_rng(seed: int, update: int, round_index: int) -> random.Random:
    """The random stream of one rollout round's draw."""
    return random.Random((seed * 1_000_003 + update) * 1_009 + round_index)


def task_draw(curriculum: CurriculumSettings, band: tuple[float, float] | None = None) -> TaskDraw:
    """The draw the settings ask for: the curriculum when ``curriculum.enabled``, STEPO's
    pass-rate band when ``band`` is given, else uniform."""
    if curriculum.enabled:
        return Curriculum(curriculum.infeasible_share, curriculum.replay_share, curriculum.hard_threshold)
    if band is not None:
        return PassRateBand(tuple(band))
    return TaskDraw()

"""Which tasks an RL update plays: per-task pass-rate estimates and the task schedulers that
read them (STEPO pass-rate calibration and a curriculum; docs/fidelity.md, "The schedulers").

The details of STEPO and of EvoCUA's curriculum are not public; what follows is our
reading, and docs/fidelity.md says so.

- ``PassRates`` (``rollout.pass_rates``) keeps per task its episodes, wins and a moving
  average of its groups' success rates; it is part of the RL checkpoint.
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
from typing import Iterable, Sequence

from hindsight.envs.infeasible import declare_offered_spec, infeasible_spec
from hindsight.rollout.pass_rates import PassRates, TaskRecord
from hindsight.rollout.tasks import TaskRef, sample_update_tasks

MASTERED_ABOVE = 1.0 - 1e-9
"""An estimate at or above this counts as 1 (every episode won)."""
BUCKETS = ("learnable", "unsolved", "hard_success", "mastered", "infeasible")
"""Curriculum buckets (metrics ``curriculum/<bucket>_drawn`` and ``_pool``)."""
FILL_ORDER = ("learnable", "unsolved", "hard_success", "mastered")
"""The buckets of real tasks, in the order a short bucket is filled from."""


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

"""Task references: which task instance an episode plays, and its group id.

A task is one environment instance: an ``EnvironmentSpec`` (environment, game, parameters),
a fold (``split``) and a seed inside it. All rollouts of one task in one iteration form a
group, identified by ``group_id = "env/game/split/seed"`` (the trajectory table's
``group_id``, e.g. ``"textworldexpress/twc/train/17"``, made by
``hindsight.data.schema.make_group_id``).
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from hindsight.data.schema import make_group_id
from hindsight.envs.base import SPLITS, EnvironmentSpec

logger = logging.getLogger(__name__)


def spec_key(spec: EnvironmentSpec) -> str:
    """A hashable, stable key of a spec (its params dict makes the spec itself unhashable)."""
    return json.dumps(
        [spec.env, spec.game, spec.params, spec.max_steps, spec.reward, spec.step_timeout_s], sort_keys=True, default=str
    )


@dataclass(frozen=True)
class TaskRef:
    """One task instance: what to build, which fold, which seed."""

    spec: EnvironmentSpec
    """Environment family, game and parameters."""
    seed: int
    """Task seed inside the fold."""
    split: str = "train"
    """Fold: train / dev / test."""

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"TaskRef: split must be one of {SPLITS}, got {self.split!r}.")

    @property
    def group_id(self) -> str:
        """``"env/game/split/seed"``."""
        return make_group_id(self.spec.env, self.spec.game, self.split, self.seed)


def as_task_ref(task: Any) -> TaskRef:
    """Accept a ``TaskRef``, an object with ``spec``/``seed``/``split`` attributes, a dict
    with those keys, or a ``(spec, seed, split)`` tuple."""
    if isinstance(task, TaskRef):
        return task
    if isinstance(task, dict):
        return TaskRef(spec=task["spec"], seed=int(task["seed"]), split=task.get("split", "train"))
    if isinstance(task, (tuple, list)) and len(task) in (2, 3):
        return TaskRef(spec=task[0], seed=int(task[1]), split=task[2] if len(task) == 3 else "train")
    if hasattr(task, "spec") and hasattr(task, "seed"):
        return TaskRef(spec=task.spec, seed=int(task.seed), split=getattr(task, "split", "train"))
    raise TypeError(f"Not a task reference (spec, seed, split): {task!r}")


def make_tasks(spec: EnvironmentSpec, split: str, seeds: Iterable[int]) -> list[TaskRef]:
    """One ``TaskRef`` per seed of ``split``."""
    return [TaskRef(spec=spec, seed=int(seed), split=split) for seed in seeds]


def as_task_refs(tasks: Sequence[Any]) -> list[TaskRef]:
    """``as_task_ref`` over a list."""
    return [as_task_ref(task) for task in tasks]


def split_tasks(spec: EnvironmentSpec, split: str, count: int, offset: int = 0, env_factory=None) -> list[TaskRef]:
    """``count`` tasks of fold ``split`` from position ``offset`` of that fold's seed list,
    as the environment itself numbers them (``TextEnvironment.seeds``): TextWorldExpress
    test seeds, ScienceWorld variations and TextWorld seed ranges all differ."""
    if env_factory is None:
        from hindsight.envs import make_env as env_factory
    env = env_factory(spec)
    try:
        seeds = env.seeds(split, count, offset)
    finally:
        env.close()
    return make_tasks(spec, split, seeds)


DEFAULT_SEEN_OFFSET = 500
"""The held-out "seen" offset on a train fold of 1000 tasks or more (TextWorldExpress's hold
1000 per game); a smaller fold starts its "seen" tasks half-way (``seen_offset``)."""


def _seen_start(env, offset: int | None) -> int:
    if offset is not None:
        return int(offset)
    size = env.fold_size("train")
    return DEFAULT_SEEN_OFFSET if size is None else min(DEFAULT_SEEN_OFFSET, size // 2)


def seen_offset(spec: EnvironmentSpec, offset: int | None, env_factory=None) -> int:
    """The train-fold position where the held-out "seen" tasks of ``spec`` start:
    ``offset`` (``environment.seen_seed_offset``) when set; when None, 500, or half the
    game's train fold where that holds fewer than 1000 tasks (a ScienceWorld task's 14
    variations: 7)."""
    if offset is not None:
        return int(offset)
    if env_factory is None:
        from hindsight.envs import make_env as env_factory
    env = env_factory(spec)
    try:
        return _seen_start(env, offset)
    finally:
        env.close()


def seen_tasks(spec: EnvironmentSpec, count: int, offset: int | None, env_factory=None) -> list[TaskRef]:
    """``count`` held-out "seen" tasks of ``spec``: train-fold tasks from ``seen_offset`` on.

    Raises:
        EnvironmentConfigError: The fold is too small; the message names the settings.
    """
    from hindsight.envs.base import EnvironmentConfigError

    if env_factory is None:
        from hindsight.envs import make_env as env_factory
    env = env_factory(spec)
    start = offset
    try:
        start = _seen_start(env, offset)
        seeds = env.seeds("train", count, start)
    except EnvironmentConfigError as error:
        chosen = f"environment.seen_seed_offset={offset}" if offset is not None else f"environment.seen_seed_offset=null (here {start})"
        raise EnvironmentConfigError(
            f"{error} The held-out 'seen' tasks are {count} per game from {chosen}: set environment.seen_seed_offset "
            "lower (null: 500, or half the game's train fold when it holds fewer than 1000 tasks), or play fewer "
            "held-out tasks per game (the stage's episodes_per_game)."
        ) from error
    finally:
        env.close()
    return make_tasks(spec, "train", seeds)


def training_task_pool(tasks: Sequence[TaskRef], fraction: float, seed: int) -> list[TaskRef]:
    """The first ``fraction`` of a shuffled (fixed seed) training-task list: smaller
    fractions are subsets of larger ones, so the data-efficiency grid is nested."""
    shuffled = list(tasks)
    random.Random(seed).shuffle(shuffled)
    keep = max(1, round(fraction * len(shuffled)))
    return shuffled[:keep]


def sample_update_tasks(pool: Sequence[TaskRef], count: int, seed: int, update: int) -> list[TaskRef]:
    """The tasks of one RL update: a deterministic draw of ``count`` from the pool that
    depends on (seed, update) only, so a resumed run draws the same tasks."""
    rng = random.Random(seed * 1_000_003 + update)
    return rng.sample(list(pool), min(count, len(pool)))


def episode_plan(
    tasks: Sequence[TaskRef], group_size: int, seed: int, policy_version: int, source: str
) -> list[tuple[int, TaskRef, str]]:
    """(order, task, episode_id) for every episode a rollout plays: ``group_size`` per task,
    group members with consecutive orders; the id names the source, group, policy version,
    rollout seed and member (``source/group_id/v<version>/r<seed>/<member>``)."""
    members: dict[str, int] = {}
    plan = []
    for task in tasks:
        for _ in range(group_size):
            member = members.get(task.group_id, 0)
            members[task.group_id] = member + 1
            plan.append((len(plan), task, f"{source}/{task.group_id}/v{policy_version}/r{seed}/{member}"))
    return plan

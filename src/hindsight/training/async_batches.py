"""Mini-group batching of asynchronous rollouts (EvoCUA-1.5; the paper names mini-groups and
leaves their shape open, so what follows is our reading).

The unit is the group: ``group_size`` episodes of one task, never split. With
``training.rl.schedulers.async_rollouts.mini_groups = N`` the learner cuts each rollout round of an update into
requests of at most ``N`` tasks (``chunk_tasks``), and the worker answers each with one
message holding those ``N`` whole groups; ``N = 0`` keeps one request per round (the whole
update's tasks in one message, the rollout the synchronous loop plays). Between two
mini-groups the worker takes any newer weights, so the later mini-groups of an update may
be played by a fresher version than the first; every row keeps its ``policy_version``, and
the staleness bound holds per row (the requests of update ``u`` are issued only once
version ``u - max_staleness`` is published).

The learner assembles an update from mini-groups as they arrive, in request order (not
arrival order, so the batch is a deterministic function of what was played). Advantages are
group-relative, so they are computed only once the update is assembled and only over
groups that arrived whole: ``require_whole_groups`` refuses a batch where a group's rows
came in more than one message. STEPO's zero-variance filter sees each round once all of its
mini-groups are in; its refill rounds are new requests of mini-groups of the same update.

A mini-group's rollout seed is the round's seed for the first chunk (so ``N = 0`` and a
round that fits in one chunk play the synchronous loop's episodes) and a value derived
from it for the others (``chunk_seed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from hindsight.rollout.engine import RolloutResult
from hindsight.rollout.tasks import TaskRef
from hindsight.training.batch import RolloutBatch
from hindsight.training.update_batch import GroupFilter, kept_rows, round_seed

RequestKey = tuple[int, int, int]
"""One mini-group request: (update, rollout round, chunk of that round)."""


@dataclass
class Delivery:
    """One mini-group as the worker delivered it."""

    version: int
    """The policy version that played it."""
    result: RolloutResult
    timings: dict[str, float]
    """``worker_wait_seconds`` (idle before playing it) and ``worker_rollout_seconds``."""


@dataclass
class UpdatePlan:
    """What the learner asked for so far for one update."""

    rounds: list[list[RequestKey]] = field(default_factory=list)
    """Per rollout round, its mini-group requests in order."""
    played: set[str] = field(default_factory=set)
    """``group_id`` of every task requested for this update (refills exclude them)."""
    draw_metrics: dict[str, float] = field(default_factory=dict)
    """The task draw's metrics of round 0 (curriculum buckets, calibration counts)."""


def describe_key(key: RequestKey | None) -> str:
    """A request key in words, for the learner's errors."""
    if key is None:
        return "no request yet"
    update, round_index, chunk = key
    return f"update {update} (round {round_index}, mini-group {chunk})"


def chunk_tasks(tasks: Sequence[TaskRef], mini_groups: int) -> list[list[TaskRef]]:
    """A round's tasks cut into requests of at most ``mini_groups`` tasks (0: one request)."""
    tasks = list(tasks)
    if not tasks:
        return []
    if mini_groups <= 0:
        return [tasks]
    return [tasks[start:start + mini_groups] for start in range(0, len(tasks), mini_groups)]


def chunk_seed(seed: int, update: int, round_index: int, chunk: int) -> int:
    """The rollout seed of one mini-group: the round's seed (``training.update_batch.round_seed``)
    for chunk 0, a distinct value derived from it for the others."""
    base = round_seed(seed, update, round_index)
    return base if chunk == 0 else base * 1_013 + chunk


def require_whole_groups(deliveries: Sequence[Delivery]) -> None:
    """Refuse mini-groups that share a group: a group's advantage needs all of its episodes."""
    owner: dict[str, int] = {}
    for index, delivery in enumerate(deliveries):
        for group_id in dict.fromkeys(delivery.result.table["group_id"]):
            if owner.setdefault(group_id, index) != index:
                raise ValueError(f"group {group_id!r} arrived split over mini-groups {owner[group_id]} and {index}")


def round_table(deliveries: Sequence[Delivery]) -> pd.DataFrame:
    """One round's rows (its mini-groups in request order), for the group filter."""
    tables = [delivery.result.table for delivery in deliveries]
    if len(tables) == 1:
        return tables[0]
    return pd.concat(tables, ignore_index=True)


def assemble_batch(
    update: int, deliveries: Sequence[Delivery], kept: Sequence[str], dropped: int, rounds: int,
    groups: GroupFilter, draw_metrics: dict[str, float],
) -> RolloutBatch:
    """The update's batch from its mini-groups: the kept groups' rows, every row played, and
    the draw's and the filter's metrics plus ``async/mini_groups_per_update``."""
    require_whole_groups(deliveries)
    table, samples, everything = kept_rows([delivery.result for delivery in deliveries], kept)
    metrics = dict(draw_metrics)
    metrics.update(groups.metrics(len(kept), dropped, rounds, len(table), len(everything)))
    metrics["async/mini_groups_per_update"] = float(len(deliveries))
    return RolloutBatch(table=table, samples=samples, played=everything, metrics=metrics, update=update)


def staleness(update: int, deliveries: Sequence[Delivery]) -> np.ndarray:
    """Per row played for the update, the learner's version minus the one that played it."""
    versions = [delivery.result.table["policy_version"].to_numpy() for delivery in deliveries]
    return update - np.concatenate(versions) if versions else np.zeros(0, dtype=int)

"""The rollout side of one RL update, the same for every method and schedule: draw the
tasks, play them, keep the groups the group filter keeps, refill over extra rounds when it
dropped some (``collect_update_batch``).

Which tasks are drawn is the task draw's (``rollout.curriculum.TaskDraw``), which groups are
kept the group filter's (``GroupFilter``: this module's base keeps every one; STEPO's
zero-variance filter, ``training.stepo``). The loop passes both from its schedule
(``training.schedule``); without them this is the plain loop's rollout: the uniform draw,
one round, every group kept. Every episode played counts in the rollout metrics, the
environment-step budget and the pass-rate estimates, kept or not (``RolloutBatch.played``).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import pandas as pd

from hindsight.policy import Policy
from hindsight.rollout.curriculum import TaskDraw
from hindsight.rollout.pass_rates import PassRates
from hindsight.rollout.engine import RolloutConfig, RolloutResult, run_rollouts
from hindsight.rollout.stats import FAULTS_ATTR
from hindsight.rollout.tasks import TaskRef
from hindsight.training.batch import RolloutBatch


def round_seed(seed: int, update: int, round_index: int) -> int:
    """The rollout seed of a round: round 0 is the plain loop's ``seed * 1_000_003 + update``."""
    base = seed * 1_000_003 + update
    return base if round_index == 0 else base * 1_009 + round_index


class GroupFilter:
    """Which played groups an update trains on: this base keeps every one (the plain loop:
    one rollout round)."""

    name = "every_group"
    extra_rounds = 0
    """Rollout rounds it may add to refill the batch."""
    shardable = True
    """Whether ranks of a ``torchrun`` learner may each filter their own share."""

    def keep(self, table: pd.DataFrame, wanted: int) -> tuple[list[str], int]:
        """(the groups of ``table`` to keep, at most ``wanted``, in order; how many it dropped)."""
        return list(dict.fromkeys(table["group_id"])), 0

    def metrics(self, kept: int, dropped: int, rounds: int, kept_rows: int, played_rows: int) -> dict[str, float]:
        """Its figures of one update."""
        return {}


def collect_update_batch(
    policy: Policy,
    env_factory: Callable,
    pool: Sequence[TaskRef],
    rates: PassRates,
    rollout_config: RolloutConfig,
    tasks_per_update: int,
    group_size: int,
    seed: int,
    update: int,
    *,
    tasks: TaskDraw | None = None,
    groups: GroupFilter | None = None,
    shard: Callable[[list[TaskRef]], list[TaskRef]] | None = None,
    source: str = "rollout",
) -> RolloutBatch:
    """Draw ``tasks_per_update`` tasks with ``tasks``, play ``group_size``
    episodes of each, and keep the groups ``groups`` keeps, refilling over at most
    ``groups.extra_rounds`` extra rounds (default: the uniform draw, every group kept).

    ``shard`` keeps the tasks this process plays (one rank of a ``torchrun`` learner, which
    allows no filtering: ranks must agree on the kept groups). ``source`` is the rows'
    ``source`` (``world_model`` for WM-R1).
    """
    tasks = tasks or TaskDraw()
    groups = groups or GroupFilter()
    if shard is not None and not groups.shardable:
        raise ValueError(
            "training.rl.schedulers.stepo.filter_zero_variance is not supported under torchrun (ranks would keep different groups)"
        )
    results: list[RolloutResult] = []
    kept: list[str] = []
    played: set[str] = set()
    metrics: dict[str, float] = {}
    dropped = 0
    for round_index in range(1 + groups.extra_rounds):
        drawn, draw_metrics = tasks.draw(
            pool, rates, tasks_per_update - len(kept), seed, update, round_index=round_index, exclude=played
        )
        if round_index == 0:
            metrics.update(draw_metrics)
        if not drawn:
            break
        if shard is not None:
            drawn = shard(drawn)
        settings = dataclasses.replace(rollout_config, group_size=group_size, seed=round_seed(seed, update, round_index))
        result = run_rollouts(policy, env_factory, drawn, settings, policy_version=update, source=source)
        results.append(result)
        played |= {task.group_id for task in drawn}
        new, constant = groups.keep(result.table, tasks_per_update - len(kept))
        kept, dropped = kept + new, dropped + constant
        if len(kept) >= tasks_per_update:
            break
    table, samples, everything = kept_rows(results, kept)
    metrics.update(groups.metrics(len(kept), dropped, len(results), len(table), len(everything)))
    return RolloutBatch(table=table, samples=samples, played=everything, metrics=metrics)


def kept_rows(results: Sequence[RolloutResult], kept: Sequence[str]) -> tuple[pd.DataFrame, list, pd.DataFrame]:
    """(the kept rows, their samples, every row played): one round that kept every group
    is passed on as it is."""
    if len(results) == 1 and set(kept) == set(results[0].table["group_id"]):
        return results[0].table, results[0].samples, results[0].table
    everything = merged_table(results)
    samples_all = [sample for result in results for sample in result.samples]
    keep = everything["group_id"].isin(set(kept)).to_numpy()
    return everything[keep].reset_index(drop=True), [sample for sample, flag in zip(samples_all, keep) if flag], everything


def merged_table(results: Sequence[RolloutResult]) -> pd.DataFrame:
    """The rounds' tables as one, with their ``faults/...`` counts added up (the failure rate
    over every planned episode)."""
    table = pd.concat([result.table for result in results], ignore_index=True)
    faults: dict[str, float] = {}
    for result in results:
        for key, value in result.faults.metrics().items():
            faults[key] = faults.get(key, 0.0) + value
    planned = sum(result.faults.planned for result in results)
    if "faults/failed_episode_rate" in faults:
        faults["faults/failed_episode_rate"] = faults.get("faults/failed_episodes", 0.0) / planned if planned else 0.0
    table.attrs[FAULTS_ATTR] = faults
    return table

"""The rollout side of one RL update and STEPO's schedulers (EvoCUA-1.5): which groups are
kept (``GroupFilter``: every group; ``ZeroVarianceFilter``) and how step samples weigh
(``SampleWeights``: equally; ``EpisodeBalance``); which tasks are played is the task draw's
(``rollout.curriculum.TaskDraw``).

The details of STEPO are not public; this is our reading (docs/fidelity.md, "The schedulers"):

- policy-aware filtering (``stepo_filter_zero_variance``): a group whose episode returns
  are all equal carries no group-relative signal (``algorithms.zero_variance_groups``), so
  it is dropped from the update; while fewer than ``tasks_per_update`` groups are kept, up
  to ``stepo_filter_max_rounds`` extra rollout rounds play tasks not yet played in this
  update (as many as groups are missing), drawn by the run's task scheduler
  (``rollout.curriculum``). Surplus groups of the last round are dropped, so the batch
  holds at most ``tasks_per_update`` groups; fewer when the rounds run out (logged). Every
  episode played counts in the rollout metrics, the environment-step budget and the
  pass-rate estimates, kept or not;
- step-level balance (``stepo_step_weights``): the group statistics are taken over one
  value per episode (its score), and each step sample's advantage is weighted ``1 / T_i``
  (``algorithms.stepo_advantages``), rescaled so the weights average 1 over the batch (the
  loss keeps its scale); every episode then carries its advantage once in total, however
  many steps it took, and the weighted advantages of a group sum to 0 (taking the
  statistics over step samples instead, as before, let a long failure outweigh a short
  success: one group of a 3-step success and a 10-step failure netted +7.98). The weight
  multiplies the sample's advantage: the PPO-clip loss is positively homogeneous in the
  advantage (``-A r``, ``-A clip(r)`` and the dual bound ``-A c`` all scale with A), so this
  equals weighting the sample's loss. The KL and distillation terms are not weighted; a
  method with a step-level term (GiGPO, EMPO) is refused.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import pandas as pd
import torch

from hindsight import algorithms
from hindsight.data.outcomes import episode_outcomes
from hindsight.policy import Policy
from hindsight.rollout.curriculum import PassRates, TaskDraw, task_draw
from hindsight.rollout.engine import RolloutConfig, RolloutResult, run_rollouts
from hindsight.rollout.stats import FAULTS_ATTR
from hindsight.rollout.tasks import TaskRef
from hindsight.training.batch import RolloutBatch
from hindsight.training.method import Method
from hindsight.training.rl_config import RLConfig


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


class ZeroVarianceFilter(GroupFilter):
    """STEPO's policy-aware filter: drop groups whose returns are all equal, refill over at
    most ``max_rounds`` extra rounds (module docstring)."""

    name = "zero_variance"
    shardable = False

    def __init__(self, max_rounds: int) -> None:
        self.extra_rounds = max_rounds

    def keep(self, table: pd.DataFrame, wanted: int) -> tuple[list[str], int]:
        informative, constant = informative_groups(table)
        return informative[:wanted], len(constant)

    def metrics(self, kept: int, dropped: int, rounds: int, kept_rows: int, played_rows: int) -> dict[str, float]:
        return {
            "stepo/kept_groups": float(kept),
            "stepo/dropped_groups": float(dropped),
            "stepo/extra_rounds": float(rounds - 1),
            "stepo/kept_sample_ratio": kept_rows / max(played_rows, 1),
        }


def group_filter(config: RLConfig) -> GroupFilter:
    """The group filter ``RLConfig`` asks for (``stepo_filter_zero_variance``)."""
    return ZeroVarianceFilter(config.stepo_filter_max_rounds) if config.stepo_filter_zero_variance else GroupFilter()


def collect_update_batch(
    policy: Policy,
    env_factory: Callable,
    pool: Sequence[TaskRef],
    rates: PassRates,
    rollout_config: RolloutConfig,
    config: RLConfig,
    seed: int,
    update: int,
    *,
    tasks: TaskDraw | None = None,
    groups: GroupFilter | None = None,
    shard: Callable[[list[TaskRef]], list[TaskRef]] | None = None,
    source: str = "rollout",
) -> RolloutBatch:
    """Draw the update's tasks (``tasks``), play them, and keep the groups ``groups`` keeps,
    refilling over at most ``groups.extra_rounds`` extra rounds (default: both as ``config``
    asks, ``Schedule.from_settings``).

    Without filtering this is the plain loop's rollout: one round, every group kept.
    ``shard`` keeps the tasks this process plays (one rank of a ``torchrun`` learner, which
    allows no filtering: ranks must agree on the kept groups). ``source`` is the rows'
    ``source`` (``world_model`` for WM-R1).
    """
    tasks = tasks or task_draw(config)
    groups = groups or group_filter(config)
    if shard is not None and not groups.shardable:
        raise ValueError("training.rl.stepo_filter_zero_variance is not supported under torchrun (ranks would keep different groups)")
    results: list[RolloutResult] = []
    kept: list[str] = []
    played: set[str] = set()
    metrics: dict[str, float] = {}
    dropped = 0
    for round_index in range(1 + groups.extra_rounds):
        drawn, draw_metrics = tasks.draw(
            pool, rates, config.tasks_per_update - len(kept), seed, update, round_index=round_index, exclude=played
        )
        if round_index == 0:
            metrics.update(draw_metrics)
        if not drawn:
            break
        if shard is not None:
            drawn = shard(drawn)
        settings = dataclasses.replace(rollout_config, group_size=config.group_size, seed=round_seed(seed, update, round_index))
        result = run_rollouts(policy, env_factory, drawn, settings, policy_version=update, source=source)
        results.append(result)
        played |= {task.group_id for task in drawn}
        new, constant = groups.keep(result.table, config.tasks_per_update - len(kept))
        kept, dropped = kept + new, dropped + constant
        if len(kept) >= config.tasks_per_update:
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


def informative_groups(table: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(groups whose episode returns differ, groups whose returns are all equal), each in
    order of first appearance."""
    outcomes = episode_outcomes(table, keys=["group_id"])
    constant = set(algorithms.zero_variance_groups(outcomes["return"].tolist(), outcomes["group_id"].tolist()))
    order = list(dict.fromkeys(outcomes["group_id"]))
    return [g for g in order if g not in constant], [g for g in order if g in constant]


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


def stepo_step_weights(episode_ids: Sequence[str]) -> tuple[torch.Tensor, dict[str, float]]:
    """``1 / T_i`` per step sample rescaled to mean 1, and ``stepo/step_weight_min`` /
    ``_max`` (their ratio is the longest over the shortest episode's length)."""
    weights = algorithms.stepo_trajectory_weights(list(episode_ids))
    weights = weights * (len(weights) / weights.sum())
    return weights, {"stepo/step_weight_min": float(weights.min()), "stepo/step_weight_max": float(weights.max())}


class SampleWeights:
    """How step samples weigh in the PPO term: this base leaves every one at 1, so the
    advantage is the method's own."""

    name = "none"

    def advantages(self, method: Method, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> tuple[torch.Tensor, dict[str, float]]:
        """The per-sample advantages the update uses, and the weights' metrics."""
        return method.advantages(batch, rl, max_steps), {}

    def check(self, method: Method) -> None:
        """Refuse a method it cannot weigh."""


class EpisodeBalance(SampleWeights):
    """STEPO's step-level balance (module docstring): the group statistics over one value
    per episode, then ``1 / T_i`` per step sample (``algorithms.stepo_advantages``), rescaled
    so the weights average 1 over the batch."""

    name = "episode_balance"

    def advantages(self, method: Method, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> tuple[torch.Tensor, dict[str, float]]:
        if not len(batch):
            return method.advantages(batch, rl, max_steps), {}
        scores = method.episode_scores(batch, rl, max_steps)
        balanced = algorithms.stepo_advantages(
            scores, batch.table["group_id"].tolist(), batch.episode_ids, std_normalize=rl.std_normalize
        )
        _, metrics = stepo_step_weights(batch.episode_ids)
        return balanced * (len(batch) / len(set(batch.episode_ids))), metrics  # the 1/T_i weights average 1

    def check(self, method: Method) -> None:
        if method.step_level:
            raise ValueError(
                f"training.rl.stepo_step_weights balances episode-level advantages; {method.name!r} adds a step-level "
                "term (use it without stepo_step_weights)"
            )


def sample_weights(config: RLConfig) -> SampleWeights:
    """The sample weighting ``RLConfig`` asks for (``stepo_step_weights``)."""
    return EpisodeBalance() if config.stepo_step_weights else SampleWeights()

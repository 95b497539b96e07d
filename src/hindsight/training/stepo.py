"""The rollout side of one RL update with STEPO (EvoCUA-1.5; ALGORITHMS.md section 5): which
tasks are played, which groups are kept, and the step-sample weights.

The details of STEPO are not public; this is our reading (the README says so):

- policy-aware filtering (``stepo_filter_zero_variance``): a group whose episode returns
  are all equal carries no group-relative signal (``algorithms.zero_variance_groups``), so
  it is dropped from the update; while fewer than ``tasks_per_update`` groups are kept, up
  to ``stepo_filter_max_rounds`` extra rollout rounds play tasks not yet played in this
  update (as many as groups are missing), drawn by the run's task scheduler
  (``rollout.curriculum``). Surplus groups of the last round are dropped, so the batch
  holds at most ``tasks_per_update`` groups; fewer when the rounds run out (logged). Every
  episode played counts in the rollout metrics, the environment-step budget and the
  pass-rate estimates, kept or not;
- step-level balance (``stepo_step_weights``): each step sample's PPO term is weighted by
  ``1 / T_i`` (``algorithms.stepo_trajectory_weights``), rescaled so the weights average 1
  over the batch (the loss keeps its scale); every episode then carries the same total
  weight, however many steps it took. The weight multiplies the sample's advantage: the
  PPO-clip loss is positively homogeneous in the advantage (``-A r``, ``-A clip(r)`` and
  the dual bound ``-A c`` all scale with A), so this equals weighting the sample's loss.
  The KL and distillation terms are not weighted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Sequence

import pandas as pd
import torch

from hindsight import algorithms
from hindsight.data.outcomes import episode_outcomes
from hindsight.policy.encoding import StepSample
from hindsight.rollout.curriculum import PassRates, draw_update_tasks
from hindsight.rollout.engine import RolloutConfig, RolloutResult, run_rollouts
from hindsight.rollout.stats import FAULTS_ATTR
from hindsight.rollout.tasks import TaskRef
from hindsight.training.rl_config import RLConfig


@dataclass
class UpdateBatch:
    """What one update trains on, and everything it played."""

    table: pd.DataFrame
    """The kept step rows (the training batch), in play order."""
    samples: list[StepSample]
    """One per row of ``table``."""
    played: pd.DataFrame
    """Every step row played in this update (rollout metrics, pass rates, last rollout)."""
    metrics: dict[str, float] = field(default_factory=dict)
    """``stepo/...``, ``curriculum/...`` and ``tasks/...`` figures of the update."""
    recorded: pd.DataFrame | None = None
    """What the run keeps as its last rollout when not ``played`` (WM-R1: the batch trained
    on, with its replayed stored successes)."""
    simulated: bool = False
    """Played inside a world model: none of its steps is an environment step."""


def round_seed(seed: int, update: int, round_index: int) -> int:
    """The rollout seed of a round: round 0 is the plain loop's ``seed * 1_000_003 + update``."""
    base = seed * 1_000_003 + update
    return base if round_index == 0 else base * 1_009 + round_index


def collect_update_batch(
    policy,
    env_factory: Callable,
    pool: Sequence[TaskRef],
    rates: PassRates,
    rollout_config: RolloutConfig,
    config: RLConfig,
    seed: int,
    update: int,
    *,
    shard: Callable[[list[TaskRef]], list[TaskRef]] | None = None,
    source: str = "rollout",
) -> UpdateBatch:
    """Draw the update's tasks, play them, and (with filtering) drop zero-variance groups
    and refill over at most ``config.stepo_filter_max_rounds`` extra rounds.

    Without filtering this is the plain loop's rollout: one round, every group kept.
    ``shard`` keeps the tasks this process plays (one rank of a ``torchrun`` learner, which
    allows no filtering: ranks must agree on the kept groups). ``source`` is the rows'
    ``source`` (``world_model`` for WM-R1).
    """
    if shard is not None and config.stepo_filter_zero_variance:
        raise ValueError("training.rl.stepo_filter_zero_variance is not supported under torchrun (ranks would keep different groups)")
    results: list[RolloutResult] = []
    kept: list[str] = []
    played: set[str] = set()
    metrics: dict[str, float] = {}
    dropped = 0
    for round_index in range(1 + (config.stepo_filter_max_rounds if config.stepo_filter_zero_variance else 0)):
        count = config.tasks_per_update - len(kept)
        tasks, draw_metrics = draw_update_tasks(pool, rates, count, config, seed, update, round_index=round_index, exclude=played)
        if round_index == 0:
            metrics.update(draw_metrics)
        if not tasks:
            break
        if shard is not None:
            tasks = shard(tasks)
        settings = dataclasses.replace(rollout_config, group_size=config.group_size, seed=round_seed(seed, update, round_index))
        result = run_rollouts(policy, env_factory, tasks, settings, policy_version=update, source=source)
        results.append(result)
        played |= {task.group_id for task in tasks}
        if not config.stepo_filter_zero_variance:
            kept = list(dict.fromkeys(result.table["group_id"]))
            break
        informative, constant = informative_groups(result.table)
        dropped += len(constant)
        kept += informative[: config.tasks_per_update - len(kept)]
        if len(kept) >= config.tasks_per_update:
            break
    if len(results) == 1 and not config.stepo_filter_zero_variance:
        table, samples, everything = results[0].table, results[0].samples, results[0].table
    else:
        everything = merged_table(results)
        samples_all = [sample for result in results for sample in result.samples]
        keep = everything["group_id"].isin(set(kept)).to_numpy()
        table = everything[keep].reset_index(drop=True)
        samples = [sample for sample, flag in zip(samples_all, keep) if flag]
    if config.stepo_filter_zero_variance:
        metrics.update({
            "stepo/kept_groups": float(len(kept)),
            "stepo/dropped_groups": float(dropped),
            "stepo/extra_rounds": float(len(results) - 1),
            "stepo/kept_sample_ratio": len(table) / max(len(everything), 1),
        })
    return UpdateBatch(table=table, samples=samples, played=everything, metrics=metrics)


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

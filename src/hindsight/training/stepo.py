"""STEPO's schedulers (EvoCUA-1.5), settings ``training.rl.schedulers.stepo``
(``training.scheduler_settings.StepoSettings``, every one off by default): which groups are kept (``ZeroVarianceFilter``,
a ``training.update_batch.GroupFilter``) and how step samples weigh (``SampleWeights``:
equally; ``EpisodeBalance``); its pass-rate band is a task draw
(``rollout.curriculum.PassRateBand``).

The details of STEPO are not public; this is our reading (docs/fidelity.md, "The schedulers"):

- policy-aware filtering (``filter_zero_variance``): a group whose episode returns
  are all equal carries no group-relative signal (``algorithms.zero_variance_groups``), so
  it is dropped from the update; while fewer than ``tasks_per_update`` groups are kept, up
  to ``filter_max_rounds`` extra rollout rounds play tasks not yet played in this
  update (as many as groups are missing), drawn by the run's task scheduler
  (``rollout.curriculum``; ``training.update_batch.collect_update_batch``). Surplus groups
  of the last round are dropped, so the batch
  holds at most ``tasks_per_update`` groups; fewer when the rounds run out (logged). Every
  episode played counts in the rollout metrics, the environment-step budget and the
  pass-rate estimates, kept or not;
- step-level balance (``step_weights``): the group statistics are taken over one
  value per episode (its score), and each step sample's advantage is weighted ``1 / T_i``
  (``algorithms.stepo_advantages``), rescaled so the weights average 1 over the batch (the
  loss keeps its scale); every episode then carries its advantage once in total, however
  many steps it took, and the weighted advantages of a group sum to 0 (taking the
  statistics over step samples instead, as before, let a long failure outweigh a short
  success: one group of a 3-step success and a 10-step failure netted +7.98). The weight
  multiplies the sample's advantage: the PPO-clip loss is positively homogeneous in the
  advantage (``-A r``, ``-A clip(r)`` and the dual bound ``-A c`` all scale with A), so this
  equals weighting the sample's loss. The KL and distillation terms are not weighted; a
  method with a step-level term (GiGPO, EMPO) is refused;
- pass-rate calibration (``pass_rate_band``): only tasks whose pass-rate estimate lies
  inside the band are drawn (``rollout.curriculum.calibrated_draw``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import pandas as pd
import torch

from hindsight import algorithms
from hindsight.data.outcomes import episode_outcomes
from hindsight.training.batch import RolloutBatch
from hindsight.training.method import Method
from hindsight.training.scheduler_settings import StepoSettings
from hindsight.training.update_batch import GroupFilter

if TYPE_CHECKING:
    from hindsight.training.rl_config import RLConfig




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


def group_filter(settings: StepoSettings) -> GroupFilter:
    """The group filter the settings ask for (``filter_zero_variance``)."""
    return ZeroVarianceFilter(settings.filter_max_rounds) if settings.filter_zero_variance else GroupFilter()


def informative_groups(table: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(groups whose episode returns differ, groups whose returns are all equal), each in
    order of first appearance."""
    outcomes = episode_outcomes(table, keys=["group_id"])
    constant = set(algorithms.zero_variance_groups(outcomes["return"].tolist(), outcomes["group_id"].tolist()))
    order = list(dict.fromkeys(outcomes["group_id"]))
    return [g for g in order if g not in constant], [g for g in order if g in constant]


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
                f"training.rl.schedulers.stepo.step_weights balances episode-level advantages; {method.name!r} adds a "
                "step-level term (use it without step_weights)"
            )


def sample_weights(settings: StepoSettings) -> SampleWeights:
    """The sample weighting the settings ask for (``step_weights``)."""
    return EpisodeBalance() if settings.step_weights else SampleWeights()

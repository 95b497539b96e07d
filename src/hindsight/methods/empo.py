"""EMPO: expert trajectories as the environment, with a dual-level advantage.

Transitions: the policy replays ingested expert trajectories (``envs.expert_replay``): a
step whose action matches the expert's moves on along the recorded trajectory, a
mismatched one is patched (the Patch Module) or ends the episode; each step scores
``0.1 * format + 0.9 * action match`` (format: ``algorithms.empo_format_ok`` on the whole
response, a thought included). The EMPO pipeline (``runs.empo_run``) passes the replay
environments to the loop.

Group filter (``min_group_score_std``, off at 0): as the released recipe's filter, a group
whose episodes' scores spread less than the threshold (population std, groups of two or
more episodes) is dropped from the update before anything is scored. The score is each
episode's step-0 step return (the discounted return, broken at mismatches, the step term
uses). The loop's group filter (``training.stepo``) is chosen from ``training.rl.schedulers`` and
refills; this one is the method's own, so it runs in ``after_rollout`` on the played batch
and does not refill (our reading: the released trainer plays more batches until it has
enough groups, our update trains on the groups it kept). ``empo/dropped_groups`` counts them.

Advantage: the episode term (GRPO over the group's returns) plus ``step_weight`` times a
step term: the discounted step returns (``gamma``), broken at mismatched steps, normalised
over the steps of the same task and step index (``algorithms.empo_advantages``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from hindsight import algorithms
from hindsight.evaluation.semi_online import empo_rollout_metrics
from hindsight.training.method import Method, episode_return_scores
from hindsight.policy import Policy
from hindsight.rollout.engine import RolloutConfig
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig

SETTINGS_KEY = "training.rl.methods.empo"


@dataclass
class EMPOSettings:
    """``training.rl.methods.empo``."""

    gamma: float = 0.5
    """Discount of the step return, which breaks at mismatched steps (released script: 0.5)."""
    step_weight: float = 1.0
    """Weight of the step-level advantage (same task, same step index); the episode term weighs 1."""
    min_group_score_std: float = 0.0
    """Drop a group of two or more episodes whose step-0 step returns have a population std
    below this before the update (0: off; the released script filters at 0.3)."""

    def __post_init__(self) -> None:
        if not self.min_group_score_std >= 0:
            raise ValueError(f"{SETTINGS_KEY}.min_group_score_std must be >= 0 (0: off), got {self.min_group_score_std}")


class EMPO(Method):
    """Expert replay as the environment; episode plus step-index group advantages."""

    name = "empo"

    Settings = EMPOSettings
    transition_source = "expert_replay"
    step_level = True

    def check(self, rl: RLConfig, *, parallel: bool) -> None:
        if self.settings.min_group_score_std > 0 and (parallel or rl.schedulers.async_rollouts.enabled):
            raise ValueError(
                f"{SETTINGS_KEY}.min_group_score_std filters the played batch in the learner, in one process and with "
                "synchronous rollouts: set it to 0, or training.rl.schedulers.async_rollouts.enabled: false and run without torchrun"
            )

    def step_returns(self, table: pd.DataFrame) -> torch.Tensor:
        """Each row's discounted step return (``gamma``), broken at mismatched steps
        (``action_valid`` False in expert replay: patched or final)."""
        return algorithms.discounted_returns(
            torch.tensor(table["reward"].to_numpy(), dtype=torch.float32), table["episode_id"].tolist(), self.settings.gamma,
            break_mask=~table["action_valid"].astype(bool).to_numpy(),
        )

    def after_rollout(self, policy: Policy, batch: RolloutBatch, rollout: RolloutConfig, rl: RLConfig, seed: int, update: int) -> None:
        """The group filter (``min_group_score_std``): drop the flat groups' rows and samples."""
        threshold = self.settings.min_group_score_std
        if threshold <= 0:
            return
        table = batch.table
        dropped: list = []
        if len(table):
            first = (table["step"] == table.groupby("episode_id")["step"].transform("min")).to_numpy()
            scores = self.step_returns(table)[torch.tensor(first)]
            dropped = algorithms.low_std_groups(scores, table.loc[first, "group_id"].tolist(), threshold)
            keep = (~table["group_id"].isin(set(dropped))).to_numpy()
            batch.table = table[keep].reset_index(drop=True)
            batch.samples = [sample for sample, kept in zip(batch.samples, keep) if kept]
        batch.metrics["empo/dropped_groups"] = float(len(dropped))
        batch.metrics["empo/kept_groups"] = float(batch.table["group_id"].nunique()) if len(batch.table) else 0.0

    def advantages(self, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> torch.Tensor:
        table = batch.table
        if not len(table):  # every group dropped by a filter
            return torch.zeros(0)
        return algorithms.empo_advantages(
            episode_return_scores(table), self.step_returns(table), table["group_id"].tolist(), table["step"].tolist(),
            step_weight=self.settings.step_weight,
        )

    def rollout_metrics(self, played: pd.DataFrame) -> dict[str, float]:
        return empo_rollout_metrics(played)

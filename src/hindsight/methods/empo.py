"""EMPO: expert trajectories as the environment, with a dual-level advantage.

Transitions: the policy replays ingested expert trajectories (``envs.expert_replay``): a
step whose action matches the expert's moves on along the recorded trajectory, a
mismatched one is patched (the Patch Module) or ends the episode; each step scores
``0.1 * format + 0.9 * action match``. The EMPO pipeline (``methods.empo_run``) passes the
replay environments to the loop.

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
from hindsight.methods.base import Method, episode_return_scores
from hindsight.methods.registry import register
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig


@dataclass
class EMPOSettings:
    """``training.rl.methods.empo``."""

    gamma: float = 0.5
    """Discount of the step return, which breaks at mismatched steps (released script: 0.5)."""
    step_weight: float = 1.0
    """Weight of the step-level advantage (same task, same step index); the episode term weighs 1."""


@register("empo")
class EMPO(Method):
    """Expert replay as the environment; episode plus step-index group advantages."""

    Settings = EMPOSettings
    transition_source = "expert_replay"
    step_level = True

    def advantages(self, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> torch.Tensor:
        table = batch.table
        # returns break at mismatched steps (action_valid False in expert replay: patched or final)
        step_returns = algorithms.discounted_returns(
            torch.tensor(table["reward"].to_numpy(), dtype=torch.float32), table["episode_id"].tolist(), self.settings.gamma,
            break_mask=~table["action_valid"].astype(bool).to_numpy(),
        )
        return algorithms.empo_advantages(
            episode_return_scores(table), step_returns, table["group_id"].tolist(), table["step"].tolist(),
            step_weight=self.settings.step_weight,
        )

    def rollout_metrics(self, played: pd.DataFrame) -> dict[str, float]:
        return empo_rollout_metrics(played)

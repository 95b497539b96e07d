"""GiGPO: GRPO's episode advantage plus a step advantage over anchor-state groups.

Steps of the same group that start from the same observation (the anchor state) form a
step group; each step's discounted return (``gamma``) is normalised inside its step group
and added with weight ``step_weight`` to the episode term
(``algorithms.gigpo_advantages``). ``similarity_threshold`` groups near-identical anchors
(difflib ratio) instead of exact matches.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hindsight import algorithms
from hindsight.training.method import Method, episode_return_scores
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig


@dataclass
class GiGPOSettings:
    """``training.rl.methods.gigpo``."""

    step_weight: float = 1.0
    """Weight of the step-level (anchor-group) advantage; the episode term weighs 1 (GiGPO's;
    ``EMPOSettings.step_weight`` weighs EMPO's step term, under ``training.rl.methods.empo``)."""
    gamma: float = 0.95
    """Discount of the step return (GiGPO's; ``EMPOSettings.gamma`` is EMPO's, whose return
    breaks at mismatched steps)."""
    similarity_threshold: float | None = None
    """None: exact anchor matching; else the difflib ratio above which anchors share a group."""


class GiGPO(Method):
    """Episode- plus anchor-state step-level group-relative advantages."""

    name = "gigpo"

    Settings = GiGPOSettings
    step_level = True

    def advantages(self, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> torch.Tensor:
        table = batch.table
        step_returns = algorithms.discounted_returns(
            torch.tensor(table["reward"].to_numpy(), dtype=torch.float32), table["episode_id"].tolist(), self.settings.gamma
        )
        return algorithms.gigpo_advantages(
            episode_return_scores(table), step_returns, table["group_id"].tolist(), table["anchor_observation"].tolist(),
            step_weight=self.settings.step_weight, std_normalize=rl.std_normalize,
            similarity_threshold=self.settings.similarity_threshold,
        )

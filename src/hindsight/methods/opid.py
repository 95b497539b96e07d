"""OPID: GRPO with the skill's shift folded into the token advantage.

The policy writes its skills and re-scores its samples as SEED does
(``methods.skill_distillation``); instead of a separate distillation loss, each distilled
token's advantage becomes ``A + weight * (l_skill - l_old)`` (``algorithms.opid_advantages``),
so the PPO term itself pulls toward the actions the skill favours.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hindsight import algorithms
from hindsight.methods.skill_distillation import SkillDistillation, SkillSettings


@dataclass
class OPIDSettings(SkillSettings):
    """``training.rl.methods.opid``."""

    weight: float = 0.001
    """Weight of (l_skill - l_old) folded into the token advantage."""


class OPID(SkillDistillation):
    """GRPO whose token advantage carries the skill-conditioned log-prob shift."""

    name = "opid"

    Settings = OPIDSettings

    def token_advantages(
        self, advantage: torch.Tensor, teacher: torch.Tensor, old: torch.Tensor, distill_mask: torch.Tensor
    ) -> torch.Tensor:
        return algorithms.opid_advantages(advantage, teacher, old, distill_mask, weight=self.settings.weight)

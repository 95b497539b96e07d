"""SEED: group-relative RL plus gated on-policy distillation from the policy's own
hindsight skills.

Each update, the policy writes a skill for each finished episode and re-scores its own
sampled actions with that skill in context (``methods.skill_distillation``). Where the
skill makes a sampled token more likely, the policy is pulled toward the skill-conditioned
distribution: per token, ``gap = stopgrad(l_skill - l)``, gate ``g = sigmoid(gate_beta *
gap)`` and the loss ``-g * l`` over the distilled tokens (``algorithms.opd_loss``), weighted
``opd_coef`` beside GRPO's PPO term and the KL. Advantages are GRPO's, over each step
sample's score as the official release gives it (``step_score: release``: the episode's
task reward, and an invalid step's penalty on that step's sample only;
``methods.step_scores``); ``step_score: episode_return`` gives every step the episode's whole
return. The release's entropy bonus is the core loop's ``training.rl.entropy_coef``.

Controls and ablations are settings: ``distill_gate: ungated`` (g = 1), ``distill: false``
(plain GRPO from the same start), ``skill_source: fixed_bank``, ``skill_assignment:
unrelated``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hindsight import algorithms
from hindsight.algorithms.losses import DISTILL_GATES
from hindsight.methods.skill_distillation import SkillDistillation, SkillSettings
from hindsight.methods.step_scores import STEP_SCORES, release_step_scores
from hindsight.training.batch import RolloutBatch
from hindsight.training.loss_terms import LossTerm
from hindsight.training.rl_config import RLConfig


@dataclass
class SEEDSettings(SkillSettings):
    """``training.rl.methods.seed``."""

    opd_coef: float = 0.01
    """Weight of the gated on-policy distillation loss."""
    gate_beta: float = 5.0
    """Sharpness of the distillation gate sigmoid(gate_beta * gap)."""
    distill_gate: str = "sigmoid"
    """sigmoid (g = sigmoid(gate_beta * gap)) or ungated (the control: g = 1 on every
    distilled token, naive on-policy self-distillation; ``opd/gate_*`` then read 1)."""
    distill: bool = True
    """False drops the distillation loss and the skills (ablation: plain GRPO from Stage 1)."""
    step_score: str = "release"
    """Each step sample's score (``methods.step_scores``): release (the official release: the
    episode's task reward, and an invalid action's -0.1 on its own step's sample only) or
    episode_return (every step the episode's whole return, all its penalties included). The
    same under constrained decoding (the default rollout: no invalid actions); they differ
    with free generation."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.distill_gate not in DISTILL_GATES:
            raise ValueError(f"distill_gate must be one of {DISTILL_GATES}, got {self.distill_gate!r}")
        if self.step_score not in STEP_SCORES:
            raise ValueError(f"step_score must be one of {STEP_SCORES}, got {self.step_score!r}")


class SEED(SkillDistillation):
    """GRPO + gated distillation toward the policy conditioned on its own hindsight skill."""

    name = "seed"

    Settings = SEEDSettings

    @property
    def uses_skills(self) -> bool:
        return self.settings.distill

    def check(self, rl: RLConfig, *, parallel: bool) -> None:
        if rl.schedulers.stepo.step_weights and self.settings.step_score == "release":
            raise ValueError(
                "training.rl.schedulers.stepo.step_weights takes one score per episode; methods.seed.step_score: release "
                "puts an invalid action's penalty on its own step (set step_score: episode_return, or step_weights: false)"
            )

    def episode_scores(self, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> torch.Tensor:
        if self.settings.step_score == "release":
            return release_step_scores(batch.table)
        return super().episode_scores(batch, rl, max_steps)

    def extra_loss_terms(self, logp: torch.Tensor, teacher: torch.Tensor, distill_mask: torch.Tensor, loss_agg: str) -> list[LossTerm]:
        if not self.settings.distill or distill_mask.sum() <= 0:
            return []
        settings = self.settings
        opd, opd_metrics = algorithms.opd_loss(
            logp, teacher, distill_mask, gate_beta=settings.gate_beta, agg=loss_agg, gate=settings.distill_gate
        )
        # the gap is logged once, before the update, as l_skill - l_old (SkillDistillation.analyze)
        gate_metrics = {f"opd/{k}": float(v) for k, v in opd_metrics.items() if k != "teacher_gap_mean"}
        return [LossTerm("opd", opd, distill_mask, gate_metrics, coefficient=settings.opd_coef, rows="distilled")]

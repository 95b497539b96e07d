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

import math
from dataclasses import dataclass

import torch

from hindsight import algorithms
from hindsight.algorithms.losses import DISTILL_GATES
from hindsight.methods.skill_distillation import SkillDistillation, SkillSettings
from hindsight.methods.step_scores import STEP_SCORES, release_step_scores
from hindsight.policy import Policy
from hindsight.training.played_labels import LABEL_COLUMN
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

    def analyze(self, policy: Policy, batch: RolloutBatch, rl: RLConfig) -> dict[str, float]:
        """``SkillDistillation``'s figures, and where the loop labelled the played actions
        (``training.rl.action_labels``) the gate on optimal against suboptimal ones."""
        metrics = super().analyze(policy, batch, rl)
        if self.uses_skills:
            metrics.update(labelled_gate_figures(batch, self.settings.gate_beta, self.settings.opd_coef, self.settings.distill_gate))
        return metrics

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


def labelled_gate_figures(batch: RolloutBatch, gate_beta: float, coefficient: float, gate: str = "sigmoid") -> dict[str, float]:
    """What SEED's gate makes of the played actions the loop labelled (``LABEL_COLUMN`` of
    ``batch.table``; samples with a teacher only), before the update (gap = l_skill - l_old
    over the tokens the policy chose):

    - ``opd/labelled_sample_share``: the share of samples with a teacher and a label;
    - ``opd/gate_optimal``, ``opd/gate_suboptimal``: the gate's token mean on each side;
    - ``opd/gate_push``: ``coefficient`` times their difference (``algorithms.gate_push``): how
      much more the distillation term weighs the optimal actions' tokens;
    - ``opd/shift_auroc``: the AUROC of the action's summed gap, optimal against suboptimal,
      pooled over the played actions (0.5: the skill's shift does not rank them).

    The last three only when both sides have an action. Ungated (the control), the gate is 1.
    """
    if LABEL_COLUMN not in batch.table or len(batch.table) != len(batch.samples):
        return {}
    labels = batch.table[LABEL_COLUMN].to_numpy(dtype=float)
    gaps: dict[bool, list[torch.Tensor]] = {True: [], False: []}
    scores, optimal = [], []
    for index, teacher in enumerate(batch.teacher_logp):
        chosen = batch.samples[index].choice_positions
        if teacher is None or math.isnan(labels[index]) or not len(chosen):
            continue
        gap = (teacher - batch.old_logp[index])[torch.tensor(chosen)]
        gaps[labels[index] == 1.0].append(gap)
        scores.append(float(gap.sum()))
        optimal.append(labels[index] == 1.0)
    figures = {"opd/labelled_sample_share": len(scores) / max(len(batch.samples), 1)}
    if gaps[True] and gaps[False]:
        sides = [torch.cat(gaps[side]) for side in (True, False)]
        if gate == "ungated":  # g = 1 on every distilled token: no push
            figures.update({"opd/gate_optimal": 1.0, "opd/gate_suboptimal": 1.0, "opd/gate_push": 0.0})
        else:
            figures["opd/gate_optimal"], figures["opd/gate_suboptimal"] = (float(torch.sigmoid(gate_beta * side).mean()) for side in sides)
            figures["opd/gate_push"] = algorithms.gate_push(sides[0].tolist(), sides[1].tolist(), gate_beta, coefficient)
        figures["opd/shift_auroc"] = algorithms.auroc(scores, optimal)
    return figures

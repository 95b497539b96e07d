"""What SEED and OPID share: the policy writes a hindsight skill per finished episode, and
every step sample is re-scored with a skill in context (the teacher log-probs).

Per update (``SkillDistillation.analyze``):
  1. a teacher writes one skill per finished episode, success and failure alike: the
     policy itself, greedy (on-policy, ``skill_source: on_policy``), or the fixed Stage-1
     bank (``fixed_bank``, the ablation); an analysis that fails to parse gives no skill,
     and that episode keeps its RL loss but no teacher;
  2. the sampled response tokens are re-scored with the skill injected into the prompt,
     under the same decoding restriction the actor used: the episode's own skill, or for
     the unrelated-skill control one written for another task type (``skill_assignment``,
     ``skills.assignment``).
The metrics (``opd/...``): the parse (or bank hit) rate, the teacher gap ``l_skill - l_old``
over the tokens the policy chose, its positive share, and the share of distilled samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hindsight.training.method import Method
from hindsight.policy import Policy
from hindsight.skills.analyzers import policy_teacher
from hindsight.skills.assignment import SKILL_ASSIGNMENTS, assigned_skills
from hindsight.skills.episode_views import episodes_from_table
from hindsight.skills.records import skills_table
from hindsight.skills.skill_bank import SkillBankTeacher
from hindsight.skills.teachers import Teacher
from hindsight.training.batch import RolloutBatch
from hindsight.training.distillation import has_skill, skill_augmented_logprobs
from hindsight.training.rl_config import RLConfig

SKILL_SOURCES = ("on_policy", "fixed_bank")


@dataclass
class SkillSettings:
    """Where the skills come from and which one each episode is re-scored with."""

    skill_source: str = "on_policy"
    """on_policy (the current policy writes them) or fixed_bank (ablation: the Stage-1 bank)."""
    skill_assignment: str = "own"
    """own (the skill written for the episode) or unrelated (the control: each episode with a
    skill gets one written for an episode of another task type in the batch, where there is
    one, ``skills.assignment``; logged as ``opd/skill_unrelated_share``)."""

    def __post_init__(self) -> None:
        if self.skill_source not in SKILL_SOURCES:
            raise ValueError(f"skill_source must be one of {SKILL_SOURCES}, got {self.skill_source!r}")
        if self.skill_assignment not in SKILL_ASSIGNMENTS:
            raise ValueError(f"skill_assignment must be one of {SKILL_ASSIGNMENTS}, got {self.skill_assignment!r}")


class SkillDistillation(Method):
    """A method whose loss reads teacher log-probs from the policy's own hindsight skills."""

    teacher: Teacher | None = None

    @property
    def uses_skills(self) -> bool:
        return True

    def start(self, policy: Policy) -> None:
        """The teacher: the policy being trained (it evolves with it), or the fixed bank."""
        if not self.uses_skills:
            self.teacher = None
        elif self.settings.skill_source == "fixed_bank":
            self.teacher = SkillBankTeacher(self.context.skill_bank or {})
        else:
            if self.context.analyzer is None:
                raise ValueError(f"training.rl.algorithm={self.name!r} lets the policy write skills: the run needs the analyzer settings")
            self.teacher = policy_teacher(policy, self.context.analyzer)

    def analyze(self, policy: Policy, batch: RolloutBatch, rl: RLConfig) -> dict[str, float]:
        """The skills table (``batch.skills``) and ``l_skill`` per sample (``batch.teacher_logp``,
        None where the episode has no skill); returns the ``opd/...`` metrics."""
        if self.teacher is None:
            return {}
        episodes = episodes_from_table(batch.table)
        skills = skills_table(self.teacher.write_skills(episodes))
        own = {episode: skill for episode, skill in zip(skills["episode_id"], skills["skill"]) if has_skill(skill)}
        skill_of, metrics = assigned_skills(episodes, own, self.settings.skill_assignment)
        samples, old_logp = batch.samples, batch.old_logp
        teacher_logp = skill_augmented_logprobs(policy.model, policy.tokenizer, samples, skill_of, rl.mini_batch_size)
        metrics[self.teacher.found_metric] = float(skills["parse_ok"].mean()) if len(skills) else 0.0
        with_skill = [i for i, logp in enumerate(teacher_logp) if logp is not None]
        if with_skill:
            # the teacher gap l_skill - l_old over the tokens the policy chose (forced ones say nothing)
            chosen = [torch.tensor(samples[i].choice_positions) for i in with_skill]
            gaps = torch.cat([(teacher_logp[i] - old_logp[i])[keep] for i, keep in zip(with_skill, chosen)])
            if len(gaps):
                metrics["opd/teacher_gap_mean"] = float(gaps.mean())
                metrics["opd/teacher_gap_positive_ratio"] = float((gaps > 0).float().mean())
        metrics["opd/distilled_sample_ratio"] = len(with_skill) / max(len(samples), 1)
        batch.skills, batch.teacher_logp = skills, teacher_logp
        return metrics

"""SEED's hindsight skills (docs/fidelity.md, SEED): teachers that write a skill for each
finished episode, robust parsing of their JSON, the validation filter, and the analyzer's SFT set.
Skill injection into prompts is prompt building and lives in ``hindsight.policy.skill_injection``
(its names are re-exported here).

Files: ``episode_views.py`` (read-only episodes from the trajectory table),
``analysis_prompt.py`` (the prompt a teacher answers, the JSON target), ``parsing.py``
(``parse_skill_json``), ``records.py`` (``SkillRecord``, ``parse_rate``, ``skills_table``),
``teachers.py`` (the ``Teacher`` interface), ``rule_miner.py`` + ``action_roles.py`` (the
offline default teacher), ``http_teacher.py`` (OpenAI-compatible endpoint),
``policy_teacher.py`` (the policy as analyzer), ``skill_bank.py`` (the fixed Stage-1 bank
as a teacher, for the ablation), ``structured.py`` (analyzer decoding inside a fixed JSON
frame), ``analyzers.py`` (``AnalyzerConfig``, the analyzer settings, and the teacher they name),
``validation.py`` (the filter, the validated Skills table), ``sft_set.py`` (analyzer SFT
examples), ``assignment.py`` (which skill an episode is re-scored with: its own, or an
unrelated one for the control), ``compact.py`` + ``compact_decoding.py`` (the compact
skill language and its teachers). Stage 1's skill-use examples, teacher fit and premise
check: ``hindsight.stage1``.
"""

from hindsight.skills.analysis_prompt import build_analysis_prompt, skill_target_json
from hindsight.skills.analyzers import AnalyzerConfig
from hindsight.skills.episode_views import EpisodeView, StepView, episodes_from_table
from hindsight.policy.skill_injection import inject_skill, injected_skill, remove_skill, skill_block
from hindsight.skills.parsing import parse_skill_json
from hindsight.skills.records import SkillRecord, parse_rate, record_from_output, skills_table
from hindsight.skills.sft_set import analyzer_sft_examples
from hindsight.skills.http_teacher import OpenAICompatibleTeacher, TeacherRequestError
from hindsight.skills.policy_teacher import PolicyTeacher
from hindsight.skills.rule_miner import RuleMinerTeacher
from hindsight.skills.skill_bank import SkillBankTeacher, skill_bank_from_table
from hindsight.skills.teachers import Teacher, episode_analysis_prompt
from hindsight.skills.validation import ValidationOutcome, skill_passes_validation, validated_skills_table

__all__ = [
    "AnalyzerConfig",
    "EpisodeView",
    "OpenAICompatibleTeacher",
    "PolicyTeacher",
    "RuleMinerTeacher",
    "SkillBankTeacher",
    "SkillRecord",
    "StepView",
    "Teacher",
    "TeacherRequestError",
    "ValidationOutcome",
    "analyzer_sft_examples",
    "build_analysis_prompt",
    "episode_analysis_prompt",
    "episodes_from_table",
    "inject_skill",
    "injected_skill",
    "remove_skill",
    "parse_rate",
    "parse_skill_json",
    "record_from_output",
    "skill_bank_from_table",
    "skill_block",
    "skill_passes_validation",
    "skill_target_json",
    "skills_table",
    "validated_skills_table",
]

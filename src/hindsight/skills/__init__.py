"""Hindsight skills (ALGORITHMS.md section 1): teachers that write a skill for each finished
episode, robust parsing of their JSON, the validation filter, skill injection into prompts,
and the analyzer's SFT set.

Files: ``episodes.py`` (episodes from the trajectory table), ``analysis_prompt.py`` (the
prompt a teacher answers, the JSON target), ``parsing.py`` (``parse_skill_json``),
``records.py`` (``SkillRecord``, ``parse_rate``), ``teacher.py`` (the interface),
``rule_miner.py`` + ``action_roles.py`` (the offline default teacher), ``http_teacher.py``
(OpenAI-compatible endpoint), ``policy_teacher.py`` (the policy as analyzer),
``injection.py`` (``inject_skill``), ``validation.py`` (filter, Skills table),
``sft_set.py`` (analyzer SFT examples).
"""

from hindsight.skills.analysis_prompt import build_analysis_prompt, skill_target_json
from hindsight.skills.episodes import EpisodeView, StepView, episodes_from_table
from hindsight.skills.injection import inject_skill, skill_block
from hindsight.skills.parsing import parse_skill_json
from hindsight.skills.records import SkillRecord, parse_rate, record_from_output
from hindsight.skills.sft_set import analyzer_sft_examples
from hindsight.skills.teachers import (
    OpenAICompatibleTeacher,
    PolicyTeacher,
    RuleMinerTeacher,
    Teacher,
    TeacherRequestError,
    episode_analysis_prompt,
)
from hindsight.skills.validation import (
    SKILLS_TABLE_COLUMNS,
    ValidationOutcome,
    skill_passes_validation,
    skills_table,
)

__all__ = [
    "SKILLS_TABLE_COLUMNS",
    "EpisodeView",
    "OpenAICompatibleTeacher",
    "PolicyTeacher",
    "RuleMinerTeacher",
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
    "parse_rate",
    "parse_skill_json",
    "record_from_output",
    "skill_block",
    "skill_passes_validation",
    "skill_target_json",
    "skills_table",
]

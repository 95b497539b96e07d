"""All skill teachers behind one import: the ``Teacher`` interface and its three
implementations (rule miner, OpenAI-compatible endpoint, the policy itself)."""

from hindsight.skills.http_teacher import OpenAICompatibleTeacher, TeacherRequestError
from hindsight.skills.policy_teacher import PolicyTeacher, policy_analyzer
from hindsight.skills.rule_miner import RuleMinerTeacher
from hindsight.skills.teacher import Teacher, episode_analysis_prompt

__all__ = [
    "OpenAICompatibleTeacher",
    "PolicyTeacher",
    "RuleMinerTeacher",
    "Teacher",
    "TeacherRequestError",
    "episode_analysis_prompt",
    "policy_analyzer",
]

"""Who writes a skill, in the language the ``analyzer`` settings name.

``AnalyzerConfig`` is those settings (the ``analyzer`` block of ``parameters.yml``; the field
of ``hindsight.config.ProjectConfig``). One place turns it into a teacher, so the skills
stage (Stage 1) and the RL loop (Stage 2) write skills the same way:

- ``rule_teacher``: the offline rule teacher of the language (the compact rule teacher, or
  the rule miner's JSON skills);
- ``policy_teacher``: the policy itself, greedy (compact: under the grammar of each episode's
  own actions, so every analysis parses; json: free text or the structured frame).
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.policy import Policy
from hindsight.skills.compact import CompactRuleTeacher
from hindsight.skills.compact_decoding import CompactPolicyTeacher
from hindsight.skills.policy_teacher import PolicyTeacher, policy_analyzer
from hindsight.skills.rule_miner import RuleMinerTeacher
from hindsight.skills.teachers import Teacher

ANALYZER_LANGUAGES = ("compact", "json")


@dataclass
class AnalyzerConfig:
    """How the policy writes a hindsight skill (the RL loop, and a policy teacher)."""

    language: str = "compact"
    """The skill language. ``compact``: ``do: a; b`` / ``avoid: a; b`` written under a grammar
    from the episode's own actions (``skills.compact``; every analysis parses). ``json``: the
    paper's JSON summary + skill, free text (or ``structured``), for a policy that can write it."""
    concrete: bool = True
    """Compact skills name the episode's actions as played (``take carrot``) rather than
    abstract roles (``take <object>``)."""
    max_templates: int = 7
    """Most actions in one compact skill."""
    max_new_tokens: int = 96
    """JSON language: token limit of one analysis (below the rule miner's 170-380-token
    targets; use at least the target length with a policy that can write skills)."""
    structured: bool = False
    """JSON language: fill only the two strings of a fixed JSON frame (``skills.structured``)."""
    max_prompt_chars: int = 2400
    """JSON language: cap on the analysis prompt in characters, earliest steps dropped first
    (the compact prompt shows the whole episode, one short line per action)."""
    max_field_chars: int = 600
    """JSON language: cap on each observation and response in the analysis prompt (its
    start is kept)."""
    name_objects_by_role: bool = True
    """JSON language: the success instruction asks to name objects by their role (object,
    container, tool) rather than by name; our reading for a tiny policy (false: the official
    release's prompt, which does not ask it)."""

    def __post_init__(self) -> None:
        for name in ("structured", "concrete", "name_objects_by_role"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"analyzer.{name} must be true or false, got {getattr(self, name)!r}")
        if self.language not in ANALYZER_LANGUAGES:
            raise ValueError(f"analyzer.language must be one of {', '.join(ANALYZER_LANGUAGES)}, got {self.language!r}")
        for name in ("max_templates", "max_new_tokens", "max_prompt_chars", "max_field_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"analyzer.{name} must be positive, got {getattr(self, name)}")

    @property
    def compact(self) -> bool:
        """Whether skills are written in the compact language."""
        return self.language == "compact"

    def prompt_options(self) -> dict:
        """The JSON analysis prompt's settings, as ``teachers.episode_analysis_prompt`` takes them."""
        return {"max_chars": self.max_prompt_chars, "max_field_chars": self.max_field_chars, "name_by_role": self.name_objects_by_role}


def rule_teacher(analyzer: AnalyzerConfig) -> Teacher:
    """The deterministic offline teacher of ``analyzer.language``."""
    if analyzer.compact:
        return CompactRuleTeacher(analyzer.max_templates, concrete=analyzer.concrete)
    return RuleMinerTeacher()


def policy_teacher(policy: Policy, analyzer: AnalyzerConfig, max_length: int | None = None) -> Teacher:
    """The policy as its own analyzer, greedy, in ``analyzer.language``.

    Args:
        policy: A ``hindsight.policy.Policy``.
        analyzer: The analyzer settings.
        max_length: Prompt + response token budget of a compact analysis (None: the model's).
    """
    if analyzer.compact:
        return CompactPolicyTeacher(
            policy, concrete=analyzer.concrete, max_templates=analyzer.max_templates, max_length=max_length
        )
    generate = policy_analyzer(policy, analyzer.max_new_tokens, analyzer.structured)
    options = analyzer.prompt_options()
    return PolicyTeacher(
        generate, max_prompt_chars=options["max_chars"], max_field_chars=options["max_field_chars"],
        name_by_role=options["name_by_role"],
    )

"""Who writes a skill, in the language the ``analyzer`` settings name.

One place turns ``AnalyzerConfig`` into a teacher, so the skills stage (Stage 1) and the RL
loop (Stage 2) write skills the same way:

- ``rule_teacher``: the offline rule teacher of the language (the compact rule teacher, or
  the rule miner's JSON skills);
- ``policy_teacher``: the policy itself, greedy (compact: under the grammar of each episode's
  own actions, so every analysis parses; json: free text or the structured frame).
"""

from __future__ import annotations

from hindsight.config import AnalyzerConfig
from hindsight.skills.compact import CompactRuleTeacher
from hindsight.skills.compact_decoding import CompactPolicyTeacher
from hindsight.skills.policy_teacher import PolicyTeacher, policy_analyzer
from hindsight.skills.rule_miner import RuleMinerTeacher
from hindsight.skills.teachers import Teacher


def rule_teacher(analyzer: AnalyzerConfig) -> Teacher:
    """The deterministic offline teacher of ``analyzer.language``."""
    if analyzer.compact:
        return CompactRuleTeacher(analyzer.max_templates, concrete=analyzer.concrete)
    return RuleMinerTeacher()


def policy_teacher(policy, analyzer: AnalyzerConfig, max_length: int | None = None) -> Teacher:
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
    return PolicyTeacher(generate, max_prompt_chars=analyzer.max_prompt_chars)

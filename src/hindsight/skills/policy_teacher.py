"""The policy as its own analyzer (SEED Stage 2): greedy generation on analysis prompts.

``PolicyTeacher`` takes a batched generate function (``policy_analyzer`` makes it from the
policy: free greedy text, or the structured decoder of ``skills.structured``;
``list[str] -> list[str]``), builds one analysis prompt per episode, generates all answers
in one call and parses them. No retry: an answer that does not parse gives
``parse_ok=False`` and the trajectory keeps only its RL loss (docs/fidelity.md, SEED).
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

from hindsight.policy import Policy
from hindsight.policy.generation import generate_text
from hindsight.skills.analysis_prompt import DEFAULT_MAX_CHARS, DEFAULT_MAX_FIELD_CHARS
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.records import SkillRecord, parse_rate, record_from_output
from hindsight.skills.structured import structured_skill_outputs
from hindsight.skills.teachers import Teacher, episode_analysis_prompt

logger = logging.getLogger(__name__)


def policy_analyzer(policy: Policy, max_new_tokens: int, structured: bool = False) -> Callable[[list[str]], list[str]]:
    """The policy's greedy analyses as a batched generate function.

    Args:
        policy: A ``hindsight.policy.Policy``.
        max_new_tokens: Token budget of one analysis (structured: a third for the summary,
            the rest for the skill).
        structured: Write the JSON frame and let the policy fill only its two strings.
    """
    if structured:
        summary_tokens = max(1, max_new_tokens // 3)
        skill_tokens = max(1, max_new_tokens - summary_tokens)
        return lambda prompts: structured_skill_outputs(policy, prompts, summary_tokens, skill_tokens)
    return lambda prompts: generate_text(policy, prompts, max_new_tokens=max_new_tokens)


class PolicyTeacher(Teacher):
    """Teacher that asks a generate function (the policy, greedy) for every skill."""

    name = "policy"

    def __init__(
        self, generate: Callable[[list[str]], list[str]], max_prompt_chars: int = DEFAULT_MAX_CHARS,
        max_field_chars: int = DEFAULT_MAX_FIELD_CHARS, name_by_role: bool = True,
    ) -> None:
        """Wrap a batched generate function.

        Args:
            generate: Maps prompts to completions, one per prompt, in order (greedy decoding).
            max_prompt_chars: Cap on each analysis prompt's length.
            max_field_chars: Cap on each observation / response in it.
            name_by_role: The prompt asks to name objects by their role (``build_analysis_prompt``).
        """
        self.generate = generate
        self.max_prompt_chars = max_prompt_chars
        self.max_field_chars = max_field_chars
        self.name_by_role = name_by_role

    def prompts(self, episodes: Sequence[EpisodeView]) -> list[str]:
        """The analysis prompts of ``episodes``, in order."""
        return [
            episode_analysis_prompt(
                episode, max_chars=self.max_prompt_chars, max_field_chars=self.max_field_chars, name_by_role=self.name_by_role
            )
            for episode in episodes
        ]

    def write_skills(self, episodes: Sequence[EpisodeView]) -> list[SkillRecord]:
        """Generate and parse one skill per episode.

        Args:
            episodes: Finished episodes.

        Returns:
            One record per episode, in order.
        """
        if not episodes:
            return []
        prompts = self.prompts(episodes)
        outputs = list(self.generate(prompts))
        if len(outputs) != len(prompts):
            raise ValueError(f"generate returned {len(outputs)} completions for {len(prompts)} prompts")
        records = [record_from_output(episode, output, self.name) for episode, output in zip(episodes, outputs)]
        logger.info("policy teacher: %d skills, parse rate %.3f", len(records), parse_rate(records))
        return records

"""The policy writes a compact skill under its grammar (``skills.compact``), greedily.

The same constrained decoding as actions (``policy.generation.generate`` with
``valid_actions``: a token trie over the options, the policy's distribution renormalised
over the allowed ids) chooses, for every prompt of a batch:

1. the head among ``["do:", "avoid:"]``;
2. then, for up to ``max_templates`` rounds, one option among the vocabulary's template
   pieces (``" <template> ;"``) and END (the empty option: EOS alone); END is offered from
   the second round on, so a skill has at least one template. Each chosen piece's tokens are
   appended to that row's continuation; rows that chose END stop.

The pieces are the written form the analyzer is trained on (``compact.written_skill`` + EOS),
token for token, so decoding asks the policy exactly the choices its SFT target taught.
Every output is ``skill_target_json(summary, skill)`` built from the choices, so every
analysis parses; the content is the policy's own.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import torch

from hindsight.policy.encoding import encode_prompt
from hindsight.policy.generation import SamplingConfig, generate
from hindsight.skills.compact import (
    MAX_TEMPLATES,
    SKILL_HEADS,
    compact_analysis_prompt,
    compact_skill_json,
    render_skill,
    template_piece,
)
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.policy_teacher import PolicyTeacher

logger = logging.getLogger(__name__)

END_OF_SKILL = ""
"""The END option: no text, so its response is EOS alone."""


def _choose(policy, prompt_ids: list[list[int]], options: list[str], max_length: int | None) -> list[tuple[str, list[int]]]:
    """Greedy constrained choice among ``options`` for every row: (option, its ids without EOS)."""
    config = SamplingConfig(temperature=0.0, constrained=True, max_length=max_length)
    generations = generate(
        policy,
        prompt_ids=prompt_ids,
        config=config,
        valid_actions=[options] * len(prompt_ids),
        generator=torch.Generator().manual_seed(0),
    )
    return [(generation.text, list(generation.sample.response_ids[:-1])) for generation in generations]


def grammar_skill_outputs(
    policy,
    prompts: Sequence[str],
    vocabulary: Sequence[str],
    max_templates: int = MAX_TEMPLATES,
    max_length: int | None = None,
) -> list[str]:
    """Greedy analyses under the compact grammar: one parseable JSON text per prompt.

    Args:
        policy: A ``hindsight.policy.Policy``.
        prompts: Analysis prompts (``compact.compact_analysis_prompt``).
        vocabulary: The templates the policy may choose (``compact.skill_vocabulary``).
        max_templates: Most templates per skill.
        max_length: Prompt + response token budget (None: the model's maximum).

    Returns:
        ``skill_target_json(summary, skill)`` texts in prompt order; summary "success" for a
        "do:" skill, "failure" for an "avoid:" one.

    Raises:
        ValueError: The vocabulary is empty or ``max_templates`` is not positive.
    """
    templates = list(dict.fromkeys(str(template) for template in vocabulary))
    if not templates:
        raise ValueError("grammar analyzer: the template vocabulary is empty")
    if max_templates < 1:
        raise ValueError(f"grammar analyzer: max_templates must be positive, got {max_templates}")
    if not prompts:
        return []
    tokenizer = policy.tokenizer
    continuations = [encode_prompt(tokenizer, prompt) for prompt in prompts]
    chosen = _choose(policy, continuations, list(SKILL_HEADS), max_length)
    heads = [head for head, _ in chosen]
    continuations = [ids + head_ids for ids, (_, head_ids) in zip(continuations, chosen)]
    skill_templates: list[list[str]] = [[] for _ in prompts]
    piece_of = {template_piece(template): template for template in templates}
    live = list(range(len(prompts)))
    for round_index in range(max_templates):
        if not live:
            break
        options = list(piece_of) + ([END_OF_SKILL] if round_index > 0 else [])
        chosen = _choose(policy, [continuations[row] for row in live], options, max_length)
        still_live = []
        for row, (piece, piece_ids) in zip(live, chosen):
            if piece == END_OF_SKILL:
                continue
            skill_templates[row].append(piece_of[piece])
            continuations[row] = continuations[row] + piece_ids
            still_live.append(row)
        live = still_live
    return [compact_skill_json(render_skill(head, chosen_templates)) for head, chosen_templates in zip(heads, skill_templates)]


def compact_policy_analyzer(
    policy, vocabulary: Sequence[str], max_templates: int = MAX_TEMPLATES, max_length: int | None = None
) -> Callable[[list[str]], list[str]]:
    """The policy's grammar-constrained analyses as a batched generate function.

    Args:
        policy: A ``hindsight.policy.Policy``.
        vocabulary: The templates the policy may choose.
        max_templates: Most templates per skill.
        max_length: Prompt + response token budget (None: the model's maximum).

    Returns:
        ``generate(prompts) -> outputs`` (e.g. for ``PolicyTeacher`` or ``CompactPolicyTeacher``).
    """
    templates = list(vocabulary)
    return lambda prompts: grammar_skill_outputs(policy, prompts, templates, max_templates, max_length)


class CompactPolicyTeacher(PolicyTeacher):
    """``PolicyTeacher`` that asks with the compact analysis prompt (the whole episode)."""

    name = "compact_policy"

    def prompts(self, episodes: Sequence[EpisodeView]) -> list[str]:
        """The compact analysis prompts of ``episodes``, in order."""
        return [compact_analysis_prompt(episode) for episode in episodes]

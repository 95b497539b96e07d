"""Structured analyzer decoding: the policy writes only the two strings of the skill JSON.

A small policy does not learn the analyzer's JSON frame from a few SFT examples
(docs/known_limits.md: parse rate 0), so its analyses give no skill and SEED's distillation
term no signal. Like a JSON-schema-guided decoder, ``structured_skill_outputs`` writes the frame
itself and lets the policy fill the fields, greedily:

1. prompt + ``{"episode_summary": "`` -> the policy writes the summary: at least one token
   (EOS and stop tokens are masked for the first), ending at its first token containing a
   double quote or a newline (or after ``summary_tokens``);
2. prompt + that prefix + the summary + ``", "episode_skill": "`` -> the skill, ending the
   same way (or after ``skill_tokens``);
3. the two strings are put into the JSON object, so every answer parses (a field that is
   only whitespace still counts as no skill: ``parsing.parse_skill_json`` needs non-empty
   fields).

The content is the policy's own: the frame only removes the format as a failure cause, and
the distillation gate decides how much an unhelpful skill counts (``algorithms.opd_loss``).
"""

from __future__ import annotations

import json
from typing import Sequence

import torch

from hindsight.policy import Policy
from hindsight.policy.encoding import encode_prompt
from hindsight.policy.generation import SamplingConfig, generate

SUMMARY_OPEN = '{"episode_summary": "'
SKILL_OPEN = '", "episode_skill": "'


def _field_config(max_new_tokens: int, max_length: int | None) -> SamplingConfig:
    return SamplingConfig(
        max_new_tokens=max_new_tokens,
        temperature=0.0,
        constrained=False,
        stop_at_newline=True,
        stop_strings=('"',),
        min_new_tokens=1,
        max_length=max_length,
    )


def structured_skill_outputs(
    policy: Policy,
    prompts: Sequence[str],
    summary_tokens: int = 32,
    skill_tokens: int = 64,
    max_length: int | None = None,
) -> list[str]:
    """Greedy analyses whose JSON frame is fixed: one parseable JSON text per prompt.

    Args:
        policy: A ``hindsight.policy.Policy``.
        prompts: Analysis prompts (``skills.teacher.episode_analysis_prompt``).
        summary_tokens: Most tokens of ``episode_summary``.
        skill_tokens: Most tokens of ``episode_skill``.
        max_length: Prompt + response token budget (None: the model's maximum).

    Returns:
        ``{"episode_summary": ..., "episode_skill": ...}`` texts, in prompt order.
    """
    if summary_tokens < 1 or skill_tokens < 1:
        raise ValueError(f"structured analyzer: token budgets must be positive, got {summary_tokens}, {skill_tokens}")
    tokenizer = policy.tokenizer
    rendered = [encode_prompt(tokenizer, prompt) for prompt in prompts]

    def continue_after(prefixes: list[str], budget: int) -> list[str]:
        prompt_ids = [ids + tokenizer(prefix, add_special_tokens=False)["input_ids"] for ids, prefix in zip(rendered, prefixes)]
        generations = generate(
            policy, prompt_ids=prompt_ids, config=_field_config(budget, max_length), generator=torch.Generator().manual_seed(0)
        )
        return [generation.text for generation in generations]

    summaries = continue_after([SUMMARY_OPEN] * len(rendered), summary_tokens)
    skills = continue_after([SUMMARY_OPEN + summary + SKILL_OPEN for summary in summaries], skill_tokens)
    return [
        json.dumps({"episode_summary": summary, "episode_skill": skill}, ensure_ascii=False)
        for summary, skill in zip(summaries, skills)
    ]

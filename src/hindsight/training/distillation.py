"""Teacher scoring for SEED: the log-probs of already sampled response tokens under the
plain prompt and under the skill-augmented prompt, and the token-level table built from them.

Used by the RL loop (``l_skill`` of every step sample whose episode has a skill) and by the
scoring pipeline (the versioned scores table), so both compute it one way.
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd
import torch

from hindsight.policy.batching import length_sorted_chunks
from hindsight.policy.encoding import StepSample, collate
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.skill_injection import inject_skill
from hindsight.training.episode_batches import episode_response_logprobs, is_multiturn, with_skill_ids
from hindsight.policy.prefix_scoring import prefix_shared_logprobs, shared_prefix_lengths

SCORING_TOKEN_BUDGET = 8192
"""Padded tokens per no-grad scoring pass (batch rows x longest sequence)."""

SCORES_COLUMNS = ["episode_id", "step", "token_index", "token", "logp_plain", "logp_skill", "gap", "gate"]


def has_skill(skill) -> bool:
    """A usable skill text: a non-empty string (pandas stores a missing skill as None or NaN)."""
    return isinstance(skill, str) and bool(skill.strip())


@torch.no_grad()
def response_logprobs(
    model,
    samples: Sequence[StepSample],
    batch_size: int,
    pad_token_id: int,
    token_budget: int | None = SCORING_TOKEN_BUDGET,
) -> list[torch.Tensor]:
    """Per sample, the log-probs of its response tokens (1-D, response order), no grad.

    Each is taken under the sample's own decoding restriction (its allowed ids). Samples go
    through the model sorted by length (little padding: a batch's prompts vary by hundreds
    of tokens), in batches of at most ``batch_size`` rows and ``token_budget`` padded tokens
    (bounded memory, whatever the prompt lengths); the results come back in ``samples``
    order. Multi-turn samples are scored one pass per episode (``episode_batches``)."""
    if is_multiturn(samples):
        return episode_response_logprobs(model, samples, pad_token_id, token_budget)
    was_training = model.training
    model.eval()
    out: list[torch.Tensor | None] = [None] * len(samples)
    device = next(model.parameters()).device
    for indices in length_sorted_chunks([len(sample.input_ids) for sample in samples], token_budget, batch_size):
        chunk = [samples[i] for i in indices]
        batch = collate(chunk, pad_token_id)
        logp = token_logprobs(model, batch.to(device))[:, -batch.response_width :].float().cpu()
        for index, row, sample in zip(indices, logp, chunk):
            out[index] = row[row.shape[0] - len(sample.response_ids) :].clone()
    if was_training:
        model.train()
    return out  # type: ignore[return-value]


def skill_augmented_logprobs(
    model,
    tokenizer,
    samples: Sequence[StepSample],
    skill_of_episode: dict[str, str | None],
    batch_size: int,
) -> list[torch.Tensor | None]:
    """``l_skill`` per sample: its response re-scored with its episode's skill injected;
    None for samples whose episode has no skill (no distillation signal for them).

    The step prompts of one episode share their start, the task line and the skill block:
    each distinct such prefix is read once (``policy.prefix_scoring``), the rest of each prompt
    over its cache; multi-turn samples get the skill's ids once per episode pass instead, and
    samples with a screenshot (vision policies) are read whole, their pixels in the pass."""
    with_skill = [i for i, sample in enumerate(samples) if has_skill(skill_of_episode.get(sample.episode_id))]
    augmented = [
        with_skill_ids(samples[i], tokenizer, skill_of_episode[samples[i].episode_id])
        if samples[i].header_length is not None  # multi-turn: the skill's ids once, after the header
        else samples[i].with_prompt(tokenizer, inject_skill(samples[i].prompt, skill_of_episode[samples[i].episode_id]))
        for i in with_skill
    ]
    if not augmented:
        scored = []
    elif is_multiturn(augmented) or any(sample.image is not None for sample in augmented):
        scored = response_logprobs(model, augmented, batch_size, tokenizer.pad_token_id)
    else:
        prefixes = shared_prefix_lengths(augmented, [sample.episode_id for sample in augmented])
        scored = prefix_shared_logprobs(model, augmented, prefixes, batch_size, tokenizer.pad_token_id, SCORING_TOKEN_BUDGET)
    result: list[torch.Tensor | None] = [None] * len(samples)
    for i, logp in zip(with_skill, scored):
        result[i] = logp
    return result


def scores_table(
    samples: Sequence[StepSample],
    plain: Sequence[torch.Tensor],
    skill: Sequence[torch.Tensor | None],
    tokenizer,
    gate_beta: float = 5.0,
) -> pd.DataFrame:
    """One row per response token of every sample that has a skill (columns ``SCORES_COLUMNS``).

    ``gap = logp_skill - logp_plain`` and ``gate = sigmoid(gate_beta * gap)``.
    """
    rows = []
    for sample, logp_plain, logp_skill in zip(samples, plain, skill):
        if logp_skill is None:
            continue
        for index, (token_id, lp, ls) in enumerate(zip(sample.response_ids, logp_plain.tolist(), logp_skill.tolist())):
            gap = ls - lp
            rows.append(
                {
                    "episode_id": sample.episode_id,
                    "step": sample.step,
                    "token_index": index,
                    "token": tokenizer.convert_ids_to_tokens(int(token_id)),
                    "logp_plain": lp,
                    "logp_skill": ls,
                    "gap": gap,
                    "gate": 1.0 / (1.0 + math.exp(-gate_beta * gap)),
                }
            )
    return pd.DataFrame(rows, columns=SCORES_COLUMNS)

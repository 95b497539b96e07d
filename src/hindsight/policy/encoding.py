"""Turn (prompt, response) pairs into padded token batches with a response mask.

One rule everywhere (SFT, rollout, scoring, RL): the prompt (rendered through
``prompts.render_for_model``) and the response are tokenized SEPARATELY with
``add_special_tokens=False`` and concatenated, the response followed by EOS. Tokenizing them
together could merge characters across the boundary and shift which tokens the loss sees.

- Truncation: a sequence longer than ``max_length`` loses its OLDEST prompt tokens (the start
  of the prompt, i.e. the task line and the oldest history first); the response is never cut.
  The rollout engine truncates the prompt the same way before generating and stores the ids
  it actually used, so a trainer that encodes from those ids sees exactly what the actor saw.
- Padding is on the LEFT (all responses end at the last column, as in generation).
- ``response_mask`` is 1 exactly on the response tokens, EOS included.
- ``allowed_ids`` (optional) holds, for every response position, the token ids the
  constrained decoder allowed there (padded with -1); a response position whose row is all
  -1 is unrestricted (free generation).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import torch

from hindsight.policy.prompts import render_for_model

logger = logging.getLogger(__name__)


@dataclass
class EncodedSample:
    """One tokenized (prompt, response) pair before padding."""

    prompt_ids: list[int]
    """Prompt token ids (after truncation)."""
    response_ids: list[int]
    """Response token ids, EOS included when it was added."""
    allowed_ids: list[list[int]] | None = None
    """Per response token: the ids the constrained decoder allowed there ([] = unrestricted)."""
    truncated_tokens: int = 0
    """How many of the oldest prompt tokens were dropped to fit ``max_length``."""

    @property
    def input_ids(self) -> list[int]:
        """Prompt ids followed by response ids."""
        return self.prompt_ids + self.response_ids


@dataclass
class TokenBatch:
    """A left-padded batch. All tensors are [B, L] except ``allowed_ids`` [B, L, A]."""

    input_ids: torch.Tensor
    """Token ids, pad id on the left."""
    attention_mask: torch.Tensor
    """1 on real tokens, 0 on padding."""
    response_mask: torch.Tensor
    """1 where the token at that position is a response token (EOS included)."""
    allowed_ids: torch.Tensor | None = None
    """Long [B, L, A]: ids allowed at each response position, -1 padded; None = unrestricted."""

    @property
    def position_ids(self) -> torch.Tensor:
        """Positions counted from each row's first real token (what generation uses)."""
        return (self.attention_mask.long().cumsum(-1) - 1).clamp(min=0)

    def to(self, device: torch.device | str) -> "TokenBatch":
        """The same batch on ``device``."""
        return TokenBatch(
            input_ids=self.input_ids.to(device),
            attention_mask=self.attention_mask.to(device),
            response_mask=self.response_mask.to(device),
            allowed_ids=None if self.allowed_ids is None else self.allowed_ids.to(device),
        )

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def truncate_prompt(prompt_ids: Sequence[int], keep: int) -> tuple[list[int], int]:
    """Keep the last ``keep`` prompt tokens (the oldest are dropped).

    Returns:
        (kept ids, number dropped).
    """
    prompt_ids = list(prompt_ids)
    keep = max(int(keep), 0)
    dropped = max(len(prompt_ids) - keep, 0)
    return prompt_ids[dropped:], dropped


def encode_prompt(tokenizer, prompt: str) -> list[int]:
    """Token ids of a prompt rendered for the model, without special tokens added."""
    return tokenizer(render_for_model(tokenizer, prompt), add_special_tokens=False)["input_ids"]


def encode_response(tokenizer, response: str, add_eos: bool = True) -> list[int]:
    """Token ids of a response, followed by EOS when ``add_eos``."""
    ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    return ids + [tokenizer.eos_token_id] if add_eos else ids


def encode_ids(
    prompt_ids: Sequence[int],
    response_ids: Sequence[int],
    max_length: int,
    allowed_ids: Sequence[Sequence[int]] | None = None,
) -> EncodedSample:
    """Combine already tokenized prompt and response ids, truncating the prompt's start.

    Args:
        prompt_ids: Prompt token ids.
        response_ids: Response token ids (EOS included when the response has one).
        max_length: Longest prompt + response length kept.
        allowed_ids: Per response token, the ids the constrained decoder allowed.

    Returns:
        The ``EncodedSample``.

    Raises:
        ValueError: The prompt is empty, the response alone does not fit next to one prompt
            token, or ``allowed_ids`` does not have one entry per response token.
    """
    response_ids = list(response_ids)
    if len(response_ids) >= max_length:
        raise ValueError(
            f"encode_ids: the response has {len(response_ids)} tokens, which leaves no room for the prompt "
            f"within max_length={max_length}."
        )
    if allowed_ids is not None and len(allowed_ids) != len(response_ids):
        raise ValueError(
            f"encode_ids: allowed_ids has {len(allowed_ids)} entries for {len(response_ids)} response tokens."
        )
    kept, dropped = truncate_prompt(prompt_ids, max_length - len(response_ids))
    if not kept:
        raise ValueError("encode_ids: the prompt is empty; the first response token needs a prompt token before it.")
    allowed = None if allowed_ids is None else [list(ids) for ids in allowed_ids]
    return EncodedSample(prompt_ids=kept, response_ids=response_ids, allowed_ids=allowed, truncated_tokens=dropped)


def encode_sample(
    tokenizer,
    prompt: str,
    response: str,
    *,
    max_length: int = 1024,
    add_eos: bool = True,
    allowed_ids: Sequence[Sequence[int]] | None = None,
) -> EncodedSample:
    """Tokenize one (prompt, response) pair by the rule in the module docstring.

    Args:
        tokenizer: The policy's tokenizer.
        prompt: The step prompt (``prompts.build_prompt``); rendered with the chat template
            when the tokenizer has one.
        response: The response text (an action, or analyzer JSON).
        max_length: Longest prompt + response length kept (oldest prompt tokens dropped).
        add_eos: Append the EOS token to the response.
        allowed_ids: Per response token (EOS included), the ids the decoder allowed.

    Returns:
        The ``EncodedSample``.
    """
    return encode_ids(
        encode_prompt(tokenizer, prompt),
        encode_response(tokenizer, response, add_eos=add_eos),
        max_length,
        allowed_ids=allowed_ids,
    )


def collate(samples: Sequence[EncodedSample], pad_token_id: int, pad_to_multiple_of: int | None = None) -> TokenBatch:
    """Left-pad encoded samples into a ``TokenBatch``.

    Args:
        samples: Encoded samples. ``allowed_ids`` is built when any sample has them
            (positions of samples without them are unrestricted: all -1).
        pad_token_id: The id written into padding positions.
        pad_to_multiple_of: Round the batch length up to a multiple of this. Under bf16
            autocast on CPU every new sequence length builds and keeps new oneDNN kernels
            (measured: +40 MB per length, 4.3 GB after 60 lengths); few lengths, little memory.

    Returns:
        The batch; ``response_mask`` covers each sample's response ids exactly.
    """
    if not samples:
        raise ValueError("collate: no samples.")
    length = max(len(sample.input_ids) for sample in samples)
    if pad_to_multiple_of:
        length = -(-length // pad_to_multiple_of) * pad_to_multiple_of
    batch_size = len(samples)
    input_ids = torch.full((batch_size, length), int(pad_token_id), dtype=torch.long)
    attention_mask = torch.zeros((batch_size, length), dtype=torch.long)
    response_mask = torch.zeros((batch_size, length), dtype=torch.long)
    with_allowed = [sample for sample in samples if sample.allowed_ids is not None]
    allowed = None
    if with_allowed:
        width = max((len(ids) for sample in with_allowed for ids in sample.allowed_ids), default=1)
        allowed = torch.full((batch_size, length, max(width, 1)), -1, dtype=torch.long)
    for row, sample in enumerate(samples):
        ids = sample.input_ids
        start = length - len(ids)
        input_ids[row, start:] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, start:] = 1
        response_start = length - len(sample.response_ids)
        response_mask[row, response_start:] = 1
        if allowed is not None and sample.allowed_ids is not None:
            for offset, ids_here in enumerate(sample.allowed_ids):
                if ids_here:
                    allowed[row, response_start + offset, : len(ids_here)] = torch.tensor(ids_here, dtype=torch.long)
    return TokenBatch(input_ids=input_ids, attention_mask=attention_mask, response_mask=response_mask, allowed_ids=allowed)


def token_budget_chunks(indices: Sequence[int], lengths: Sequence[int], token_budget: int | None) -> list[list[int]]:
    """Cut ``indices`` (in the given order) into consecutive chunks whose padded size
    (rows x longest sequence in the chunk) stays within ``token_budget``; a sequence longer
    than the budget gets a chunk of its own. ``None``: one chunk. Sort the indices by length
    first to waste little padding."""
    indices = list(indices)
    if token_budget is None or not indices:
        return [indices] if indices else []
    chunks: list[list[int]] = []
    longest = 0
    for index in indices:
        length = lengths[index]
        if chunks and (len(chunks[-1]) + 1) * max(longest, length) <= token_budget:
            chunks[-1].append(index)
            longest = max(longest, length)
        else:
            chunks.append([index])
            longest = length
    return chunks

"""Whole-episode forward passes for the multi-turn layout: one pass per episode, an
action-token mask, instead of one pass per step.

In the multi-turn layout (``policy.episode_context``) the step samples of one episode are
prefixes of each other: step k's ``prompt_ids + response_ids`` is the start of step k+1's
``prompt_ids`` (until a truncation re-reads a shorter context). One forward pass over the
longest of them therefore gives the log-probs of every step's action tokens: causal
attention makes the logits at a position independent of what follows. ``episode_chains``
finds those chains, ``chain_logprobs`` scores them (only the positions before action tokens
go through the LM head, via ``logits_to_keep`` as index tensor), and the result is the same
per-sample log-probs ``logprobs.token_logprobs`` gives step by step, to float precision
(``tests/training/test_episode_batches.py``): the current policy's pass (with gradient),
the reference pass and the skill-augmented re-scoring (the skill's ids inserted once, after
the episode's header) all use it. Step-wise samples (``header_length`` None) form chains of
one and cost what they cost before.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from typing import Sequence

import torch

from hindsight.policy.batching import token_budget_chunks
from hindsight.policy.encoding import StepSample, truncate_prompt
from hindsight.policy.episode_context import encode_text
from hindsight.policy.logprobs import accepts_logits_to_keep, detached_entropy, restricted_entropy
from hindsight.policy.skill_injection import skill_block

logger = logging.getLogger(__name__)


def is_multiturn(samples: Sequence[StepSample]) -> bool:
    """Whether the samples come from the multi-turn layout (all carry a header length)."""
    return bool(samples) and all(sample.header_length is not None for sample in samples)


def episode_chains(samples: Sequence[StepSample], indices: Sequence[int] | None = None) -> list[list[int]]:
    """Group sample indices into chains: same episode, step order, each sample's
    ``input_ids`` a prefix of the next one's ``prompt_ids``; the last member's
    ``input_ids`` hold the whole chain. Step-wise samples are chains of one.

    Args:
        samples: Step samples.
        indices: The indices to group (all by default).

    Returns:
        Chains of indices, in order of their first member's position in ``indices``.
    """
    indices = list(range(len(samples))) if indices is None else list(indices)
    by_episode: dict[str, list[int]] = defaultdict(list)
    chains: list[list[int]] = []
    for index in indices:
        if samples[index].header_length is None or not samples[index].episode_id:
            chains.append([index])
        else:
            by_episode[samples[index].episode_id].append(index)
    for members in by_episode.values():
        members.sort(key=lambda i: samples[i].step)
        chain = [members[0]]
        for index in members[1:]:
            before = samples[chain[-1]].input_ids
            if samples[index].prompt_ids[: len(before)] == before:
                chain.append(index)
            else:
                chains.append(chain)
                chain = [index]
        chains.append(chain)
    first = {index: position for position, index in enumerate(indices)}
    return sorted(chains, key=lambda chain: min(first[i] for i in chain))


def chain_micro_batches(samples: Sequence[StepSample], indices: Sequence[int], token_budget: int | None) -> list[list[int]]:
    """Micro-batches of sample indices that keep each chain whole: chains packed by their
    sequence length within ``token_budget`` padded tokens (``batching.token_budget_chunks``)."""
    chains = episode_chains(samples, indices)
    lengths = [len(samples[chain[-1]].input_ids) for chain in chains]
    order = sorted(range(len(chains)), key=lambda c: lengths[c])
    return [[i for c in part for i in chains[c]] for part in token_budget_chunks(order, lengths, token_budget)]


def chain_logprobs(
    model, samples: Sequence[StepSample], pad_token_id: int, pad_to_multiple_of: int | None = None
) -> list[torch.Tensor]:
    """Per sample, the log-probs of its response tokens (1-D, response order), computed with
    one forward pass per chain (``episode_chains``) in one left-padded batch. Differentiable
    (call under ``torch.no_grad`` for scoring); restricted to each position's allowed ids.
    ``pad_to_multiple_of`` rounds the batch length up (few distinct lengths under bf16
    autocast on a CPU, as ``encoding.collate``).

    Returns:
        One float32 tensor per sample (on the model's device), in ``samples`` order.
    """
    return _chain_scores(model, samples, pad_token_id, pad_to_multiple_of, entropy=False)[0]


def _chain_scores(
    model, samples: Sequence[StepSample], pad_token_id: int, pad_to_multiple_of: int | None, *, entropy: bool,
    entropy_grad: bool = True,
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """(log-probs, entropies or None) per sample: the passes of ``chain_logprobs`` (the
    entropies without gradient unless ``entropy_grad``)."""
    device = next(model.parameters()).device
    chains = episode_chains(samples)
    sequences = [samples[chain[-1]].input_ids for chain in chains]
    length = max(len(ids) for ids in sequences)
    if pad_to_multiple_of:
        length = -(-length // pad_to_multiple_of) * pad_to_multiple_of
    input_ids = torch.full((len(chains), length), int(pad_token_id), dtype=torch.long)
    attention = torch.zeros((len(chains), length), dtype=torch.long)
    # (row, position) of every response token, and what the decoder allowed there
    rows, positions, allowed_rows = [], [], []
    owner: list[tuple[int, int]] = []  # per sample in chain order: (sample index, its token count)
    for row, (chain, ids) in enumerate(zip(chains, sequences)):
        offset = length - len(ids)
        input_ids[row, offset:] = torch.tensor(ids, dtype=torch.long)
        attention[row, offset:] = 1
        for index in chain:
            sample = samples[index]
            start = offset + len(sample.prompt_ids)
            rows += [row] * len(sample.response_ids)
            positions += range(start, start + len(sample.response_ids))
            allowed_rows += sample.allowed_ids if sample.allowed_ids is not None else [[]] * len(sample.response_ids)
            owner.append((index, len(sample.response_ids)))
    keep = sorted({position - 1 for position in positions})
    column = {position: k for k, position in enumerate(keep)}
    kwargs = {"logits_to_keep": torch.tensor(keep, dtype=torch.long, device=device)} if accepts_logits_to_keep(model) else {}
    output = model(
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        position_ids=(attention.cumsum(-1) - 1).clamp(min=0).to(device),
        use_cache=False,
        **kwargs,
    )
    logits = output.logits if kwargs else output.logits[:, keep]
    row_index = torch.tensor(rows, dtype=torch.long, device=device)
    column_index = torch.tensor([column[position - 1] for position in positions], dtype=torch.long, device=device)
    selected = logits[row_index, column_index].float()  # [N, V]: the logits predicting each response token
    targets = input_ids.to(device)[row_index, torch.tensor(positions, dtype=torch.long, device=device)]
    table = _allowed_table(allowed_rows, selected.device)
    sizes = [count for _, count in owner]
    logprobs = _restricted_logprobs(selected, targets, table)
    entropies = None
    if entropy:
        values = restricted_entropy(selected, table) if entropy_grad else detached_entropy(selected, table)
        entropies = torch.split(values, sizes)
    out: list[torch.Tensor | None] = [None] * len(samples)
    out_entropy: list[torch.Tensor | None] = [None] * len(samples)
    for number, ((index, _), piece) in enumerate(zip(owner, torch.split(logprobs, sizes))):
        out[index] = piece
        if entropies is not None:
            out_entropy[index] = entropies[number]
    return out, (out_entropy if entropy else None)  # type: ignore[return-value]


def _allowed_table(allowed: list[list[int]], device) -> torch.Tensor | None:
    """[N, A] allowed ids per row, -1 padding (an empty list: a row of -1, unrestricted);
    None when no row is restricted."""
    width = max((len(ids) for ids in allowed), default=0)
    if width == 0:
        return None
    table = torch.full((len(allowed), width), -1, dtype=torch.long)
    for row, ids in enumerate(allowed):
        if ids:
            table[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return table.to(device)


def _restricted_logprobs(logits: torch.Tensor, targets: torch.Tensor, table: torch.Tensor | None) -> torch.Tensor:
    """log pi(target) per row of [N, V] logits, renormalised over the row's allowed ids
    (``_allowed_table``; a row of -1 or no table: the whole vocabulary), as
    ``logprobs.token_logprobs`` does."""
    target_logits = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    full = torch.logsumexp(logits, dim=-1)
    if table is None:
        return target_logits - full
    restricted = (table >= 0).any(dim=-1)
    gathered = logits.gather(-1, table.clamp(min=0))
    # padding ids get -inf only on restricted rows (an all -1 row must stay finite for backward)
    padding = (table < 0) & restricted.unsqueeze(-1)
    normaliser = torch.logsumexp(gathered.masked_fill(padding, float("-inf")), dim=-1)
    return target_logits - torch.where(restricted, normaliser, full)


@torch.no_grad()
def episode_response_logprobs(
    model, samples: Sequence[StepSample], pad_token_id: int, token_budget: int | None
) -> list[torch.Tensor]:
    """``distillation.response_logprobs`` for multi-turn samples: no grad, chains kept whole
    within ``token_budget`` padded tokens per pass; tensors on the CPU, in ``samples`` order."""
    was_training = model.training
    model.eval()
    out: list[torch.Tensor | None] = [None] * len(samples)
    for part in chain_micro_batches(samples, range(len(samples)), token_budget):
        for index, logp in zip(part, chain_logprobs(model, [samples[i] for i in part], pad_token_id)):
            out[index] = logp.float().cpu()
    if was_training:
        model.train()
    return out  # type: ignore[return-value]


def right_aligned_logprobs(
    model, chunk: Sequence[StepSample], pad_token_id: int, entropy: bool = False, entropy_grad: bool = True
) -> tuple[torch.Tensor, torch.Tensor, int, torch.Tensor | None]:
    """The micro-batch tensors ``training.update`` takes from a ``TokenBatch``, from chain passes:
    (log-probs [B, R] with gradient, choice mask [B, R], R, and with ``entropy`` the token
    entropies [B, R], with gradient if ``entropy_grad``, else None), responses right-aligned."""
    width = max(len(sample.response_ids) for sample in chunk)
    pieces, entropies = _chain_scores(model, chunk, pad_token_id, None, entropy=entropy, entropy_grad=entropy_grad)

    def right_aligned(rows) -> torch.Tensor:
        return torch.stack([torch.nn.functional.pad(row.float().cpu(), (width - len(row), 0)) for row in rows])

    mask = torch.zeros(len(chunk), width)
    for row, sample in enumerate(chunk):
        mask[row, width - len(sample.response_ids) :] = torch.tensor(sample.choice_positions, dtype=torch.float32)
    return right_aligned(pieces), mask, width, (right_aligned(entropies) if entropies is not None else None)


def with_skill_ids(sample: StepSample, tokenizer, skill: str) -> StepSample:
    """The same multi-turn sample with the skill block's ids inserted once, right after the
    episode's header (the skill-augmented context; every other id unchanged), the oldest
    tokens cut to ``max_length`` like any context."""
    block = encode_text(tokenizer, skill_block(skill) + "\n")
    at = sample.header_length or 0
    prompt = sample.prompt_ids[:at] + block + sample.prompt_ids[at:]
    dropped = 0
    if sample.max_length is not None:
        prompt, dropped = truncate_prompt(prompt, sample.max_length - len(sample.response_ids))
    return dataclasses.replace(
        sample, prompt_ids=prompt, truncated_tokens=sample.truncated_tokens + dropped, header_length=at + len(block)
    )

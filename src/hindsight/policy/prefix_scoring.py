"""No-grad scoring of step samples that share a prompt prefix: each distinct prefix read
once, every sample's remaining ids read over its cache.

The skill-augmented prompts of one episode all start with the same ids: the task line and
the injected skill block (``policy.skill_injection``), about a third of a step prompt with a
compact skill (and the episodes of one task with the same skill share them all). Scoring
each prompt from its start (``training.distillation.response_logprobs``) reads that prefix once per
step; here it is read once:

1. ``shared_prefix_lengths``: per sample, the length of the longest id prefix its group
   (episode) shares, less one where needed so that every sample keeps a prompt id of its
   own (the one whose logits predict the first response token);
2. the distinct prefixes go through the model once (sorted by length, in chunks within the
   token budget), and each one's key/value entries are kept;
3. the samples, sorted by the length of their own remainder, are scored in micro-batches
   within the budget: the rows' prefix entries left-padded into one batch cache, the
   remainders left-padded after them, the attention mask 0 on both paddings, positions
   continuing from each row's prefix length (``logprobs.token_logprobs`` with ``prefix``).

Causal attention makes a position's logits independent of what follows it, so the result is
the log-probs of a fresh pass over each whole sample, up to float rounding
(``tests/training/test_prefix_scoring.py``). The cost: the prefixes' entries are held
until the last micro-batch (per distinct prefix: layers x 2 x its length x the KV width).
"""

from __future__ import annotations

import dataclasses
from typing import Hashable, Sequence

import torch
from transformers import DynamicCache

from hindsight.policy.batching import length_sorted_chunks
from hindsight.policy.cached_generation import BufferLayer
from hindsight.policy.encoding import StepSample, collate
from hindsight.policy.logprobs import CachedPrefix, accepts_logits_to_keep, token_logprobs

PrefixEntries = list[tuple[torch.Tensor, torch.Tensor]]
"""Per layer, one prefix's (keys, values) [heads, P, head dim]."""


def shared_prefix_lengths(samples: Sequence[StepSample], groups: Sequence[Hashable]) -> list[int]:
    """Per sample, the length of the longest prompt-id prefix shared by every sample of its
    group, capped one id below its shortest prompt (a group of one shares nothing: 0)."""
    members: dict[Hashable, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    lengths = [0] * len(samples)
    for indices in members.values():
        if len(indices) < 2:
            continue
        prompts = [samples[i].prompt_ids for i in indices]
        shared = min(len(ids) for ids in prompts) - 1
        first = prompts[0]
        for ids in prompts[1:]:
            position = 0
            while position < shared and ids[position] == first[position]:
                position += 1
            shared = position
        for i in indices:
            lengths[i] = max(shared, 0)
    return lengths


@torch.no_grad()
def prefix_shared_logprobs(
    model,
    samples: Sequence[StepSample],
    prefix_lengths: Sequence[int],
    batch_size: int,
    pad_token_id: int,
    token_budget: int | None,
) -> list[torch.Tensor]:
    """Per sample, the log-probs of its response tokens (1-D, CPU), its first
    ``prefix_lengths[i]`` prompt ids read once for all samples that start with the same ids.

    Args:
        model: A causal LM (HF), scored in eval mode, no grad.
        samples: Step-wise samples.
        prefix_lengths: Per sample, how many leading prompt ids to read from a shared
            cache (``shared_prefix_lengths``; 0: none).
        batch_size: Most rows per pass.
        pad_token_id: The padding id.
        token_budget: Most padded tokens per pass (rows x longest sequence read).

    Returns:
        One tensor per sample, in ``samples`` order, as ``distillation.response_logprobs``.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    keys = [tuple(sample.prompt_ids[:length]) for sample, length in zip(samples, prefix_lengths)]
    entries = _prefix_entries(model, sorted({key for key in keys if key}), pad_token_id, token_budget, device)
    rests = [
        dataclasses.replace(sample, prompt_ids=sample.prompt_ids[length:])
        for sample, length in zip(samples, prefix_lengths)
    ]
    out: list[torch.Tensor | None] = [None] * len(samples)
    for indices in length_sorted_chunks([len(rest.input_ids) for rest in rests], token_budget, batch_size):
        batch = collate([rests[i] for i in indices], pad_token_id)
        prefix = _batch_prefix([entries.get(keys[i]) for i in indices], batch.input_ids.shape[1], device)
        logp = token_logprobs(model, batch.to(device), prefix=prefix)[:, -batch.response_width :].float().cpu()
        for index, row in zip(indices, logp):
            out[index] = row[row.shape[0] - len(samples[index].response_ids) :].clone()
    if was_training:
        model.train()
    return out  # type: ignore[return-value]


def _prefix_entries(
    model, prefixes: list[tuple[int, ...]], pad_token_id: int, token_budget: int | None, device
) -> dict[tuple[int, ...], PrefixEntries]:
    """Each distinct prefix read once: its key/value entries per layer."""
    entries: dict[tuple[int, ...], PrefixEntries] = {}
    for indices in length_sorted_chunks([len(ids) for ids in prefixes], token_budget):
        chunk = [prefixes[i] for i in indices]
        batch = collate([StepSample(prompt_ids=list(ids), response_ids=[]) for ids in chunk], pad_token_id).to(device)
        output = model(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            past_key_values=DynamicCache(),
            use_cache=True,
            **({"logits_to_keep": 1} if accepts_logits_to_keep(model) else {}),
        )
        for row, ids in enumerate(chunk):
            real = batch.attention_mask[row].bool()
            entries[ids] = [(layer.keys[row][:, real], layer.values[row][:, real]) for layer in output.past_key_values.layers]
    return entries


def _batch_prefix(rows: list[PrefixEntries | None], room: int, device) -> CachedPrefix | None:
    """The rows' prefix entries left-padded into one batch cache with ``room`` entries per
    row for the ids read over it (None: no row has a prefix)."""
    width = max((row[0][0].shape[1] for row in rows if row), default=0)
    if width == 0:
        return None
    attention = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    lengths = torch.zeros(len(rows), dtype=torch.long, device=device)
    reference = next(row for row in rows if row)
    cache = DynamicCache()
    layers = []
    for layer, (reference_keys, _) in enumerate(reference):
        heads, _, dim = reference_keys.shape
        keys = reference_keys.new_zeros((len(rows), heads, width + room, dim))
        values = torch.zeros_like(keys)
        for position, row in enumerate(rows):
            if row:
                count = row[layer][0].shape[1]
                keys[position, :, width - count : width] = row[layer][0]
                values[position, :, width - count : width] = row[layer][1]
        layers.append(BufferLayer(keys, values, width))
    for position, row in enumerate(rows):
        if row:
            count = row[0][0].shape[1]
            attention[position, width - count :] = 1
            lengths[position] = count
    cache.layers = layers
    return CachedPrefix(cache=cache, attention=attention, lengths=lengths)

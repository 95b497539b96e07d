"""Batched decoding over live episodes, each with its own KV cache kept across turns.

``generate_turn(policy, contexts, valid_actions, config, generator)`` answers one turn of
every live episode (``episode_context.EpisodeContext``, the multi-turn layout):

1. Prefill: each context's ids not yet in its cache (the new observation segment, plus the
   previous action's last token, which was sampled but never fed) go through the model over
   the episodes' caches, batched: the caches (of different lengths) are left-padded into one
   batch cache and the new ids left-padded after them; the attention mask is 0 on both
   paddings and positions count each episode's own tokens, so every row sees exactly its
   episode's sequence. Segments are read in chunks of similar lengths within
   ``max_batch_tokens`` (a context truncated by ``EpisodeContext.begin_turn`` and read again
   from the start, counted, is not padded against short segments); identical uncached
   contexts (a group's first turn) are read once; then one batched pass feeds every row's
   last new id and gives the logits of the first response token.
2. Decode: one token per row per forward pass, constrained rows through their own valid-action
   trie, free rows over the vocabulary (``generation``'s sampling functions: the same rule,
   the same T=1 recorded log-probs). Rows that finished stay in the batch fed a masked pad.
3. Each row's real cache entries (attention 1) are cut back out into its episode's cache.

What it buys on a CPU (``benchmarks/rollout_throughput.py``, 1 thread, 3M-parameter
policy, twc): with the valid-action list in every turn, nothing (0.92x the step-wise batched
engine's env steps/s): the model reads ~2.5x fewer new tokens per turn, but each attends
over the whole episode (~900 tokens), and for a model this small CPU attention over a long
context costs about what re-reading a ~270-token prompt costs. Without the list
(``show_valid_actions: false``, contexts ~510 tokens) it is 1.38x faster.

What the trainer sees is the ``encoding.StepSample`` of each row: ``prompt_ids`` is the
context the model read, ``response_ids`` the sampled ids; ``header_length`` marks where a
skill goes (``training.episode_batches``). Its log-probs equal a fresh forward pass over
``prompt_ids + response_ids`` to float precision (``tests/rollout/test_multiturn.py``).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Sequence

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from hindsight.policy.batching import token_budget_chunks
from hindsight.policy.constrained import ActionTrie, stop_token_ids
from hindsight.policy.encoding import StepSample
from hindsight.policy.episode_context import EpisodeContext, encode_text, segment_text
from hindsight.policy.generation import Generation, SamplingConfig, response_text
from hindsight.policy.token_loop import DecodeRow, decode_step, model_max_length, sample_constrained, sample_free
from hindsight.policy.logprobs import accepts_logits_to_keep
from hindsight.policy.model import Policy
from hindsight.policy.prompts import PromptConfig

logger = logging.getLogger(__name__)


def begin_turns(
    tokenizer,
    contexts: Sequence[EpisodeContext],
    observations: Sequence[str],
    valid_actions: Sequence[Sequence[str]],
    prompt: PromptConfig,
    config: SamplingConfig,
    model,
) -> tuple[list[DecodeRow], int]:
    """Append each episode's observation segment and build its decoding row.

    Returns:
        (one row per context, how many contexts were truncated and must be read again).
    """
    max_length = config.max_length or model_max_length(model)
    rows, truncated = [], 0
    for context, observation, actions in zip(contexts, observations, valid_actions):
        row = DecodeRow(ActionTrie.from_actions(tokenizer, actions) if config.constrained and actions else None)
        row.limit = row.trie.depth if row.trie is not None else config.max_new_tokens
        budget = max_length - row.limit
        if budget < 1:
            raise ValueError(f"generate_turn: max_length={max_length} leaves no room for the context (response {row.limit}).")
        truncated += int(context.begin_turn(encode_text(tokenizer, segment_text(observation, actions, prompt)), budget))
        row.prompt_ids, row.dropped = list(context.ids), context.dropped_tokens
        rows.append(row)
    return rows, truncated


def generate_turn(
    policy: Policy,
    contexts: Sequence[EpisodeContext],
    observations: Sequence[str],
    valid_actions: Sequence[Sequence[str]],
    *,
    prompt: PromptConfig,
    config: SamplingConfig,
    generator: torch.Generator,
) -> tuple[list[Generation], int]:
    """One turn of every context: segment appended, prefill, batched decode, caches kept.

    Args:
        policy: A ``model.Policy``.
        contexts: The live episodes' contexts (changed in place: segment, action, cache).
        observations: Per context, the observation it acts on.
        valid_actions: Per context, the valid actions (the trie under constrained decoding).
        prompt: How a segment is written (``show_valid_actions``, observation cut).
        config: Decoding settings (``max_length`` bounds every context).
        generator: The seeded sampling RNG.

    Returns:
        (one ``Generation`` per context, the number of contexts truncated and re-read).
    """
    model, tokenizer = policy.model, policy.tokenizer
    device = next(model.parameters()).device
    rows, truncated = begin_turns(tokenizer, contexts, observations, valid_actions, prompt, config, model)
    if rows:
        with torch.no_grad():
            _decode_cached(model, tokenizer, contexts, rows, config, generator, device)
    generations = []
    for context, row in zip(contexts, rows):
        header_length = len(context.header_ids) if row.prompt_ids[: len(context.header_ids)] == context.header_ids else 0
        context.end_turn(row.ids)
        sample = StepSample(
            prompt_ids=row.prompt_ids,
            response_ids=list(row.ids),
            allowed_ids=row.allowed,
            old_logprobs=torch.tensor(row.logprobs, dtype=torch.float32),
            truncated_tokens=row.dropped,
            max_length=config.max_length,
            header_length=header_length,
        )
        generations.append(Generation(sample=sample, text=response_text(tokenizer, row, config), finished=row.finished))
    return generations, truncated


class BufferLayer(DynamicLayer):
    """A cache layer writing new entries into a preallocated buffer (doubled when full):
    one copy per new token, where ``DynamicLayer`` concatenates the whole cache every token
    (measured: two thirds of a decode step's CPU time at 1,600 cached tokens)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: int) -> None:
        super().__init__()
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self.buffer_keys, self.buffer_values, self.length = keys, values, length
        self.keys, self.values = keys[:, :, :length], values[:, :, :length]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        end = self.length + key_states.shape[-2]
        if end > self.buffer_keys.shape[-2]:
            grown = max(end, 2 * self.buffer_keys.shape[-2])
            self.buffer_keys = torch.nn.functional.pad(self.buffer_keys, (0, 0, 0, grown - self.buffer_keys.shape[-2]))
            self.buffer_values = torch.nn.functional.pad(self.buffer_values, (0, 0, 0, grown - self.buffer_values.shape[-2]))
        self.buffer_keys[:, :, self.length : end] = key_states
        self.buffer_values[:, :, self.length : end] = value_states
        self.length = end
        self.keys, self.values = self.buffer_keys[:, :, :end], self.buffer_values[:, :, :end]
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep only the batch rows ``indices`` (the buffer's too, or the next update would
        write into the old rows)."""
        self.buffer_keys, self.buffer_values = self.buffer_keys[indices], self.buffer_values[indices]
        self.keys, self.values = self.buffer_keys[:, :, : self.length], self.buffer_values[:, :, : self.length]


def _batch_cache(contexts: Sequence[EpisodeContext], width: int, room: int, device) -> DynamicCache:
    """The contexts' caches left-padded to ``width`` entries, as one batch cache with room
    for ``room`` more entries per row."""
    cache = DynamicCache()
    reference = next((context.cache for context in contexts if context.cache is not None), None)
    if width == 0 or reference is None:
        return cache
    layers = []
    for layer, (reference_key, _) in enumerate(reference):
        batch, heads, _, dim = reference_key.shape
        keys = reference_key.new_zeros((len(contexts), heads, width + room, dim), device=device)
        values = torch.zeros_like(keys)
        for row, context in enumerate(contexts):
            if context.cache is not None:  # else a context read from the start: all padding here
                key, value = context.cache[layer]
                keys[row, :, width - key.shape[2] : width] = key[0]
                values[row, :, width - value.shape[2] : width] = value[0]
        layers.append(BufferLayer(keys, values, width))
    cache.layers = layers
    return cache


def _prefill(model, contexts: Sequence[EpisodeContext], pad_id: int, device, room: int = 0):
    """Feed every context's uncached ids over its cache; return (last logits, cache, attention, next positions)."""
    width = max(context.cached for context in contexts)
    new = [context.ids[context.cached :] for context in contexts]
    span = max(len(ids) for ids in new)
    batch = len(contexts)
    input_ids = torch.full((batch, span), pad_id, dtype=torch.long)
    positions = torch.zeros((batch, span), dtype=torch.long)
    attention = torch.zeros((batch, width + span), dtype=torch.long)
    for row, (context, ids) in enumerate(zip(contexts, new)):
        input_ids[row, span - len(ids) :] = torch.tensor(ids, dtype=torch.long)
        positions[row, span - len(ids) :] = torch.arange(context.cached, context.cached + len(ids))
        attention[row, width - context.cached : width] = 1
        attention[row, width + span - len(ids) :] = 1
    cache = _batch_cache(contexts, width, span + room, device)
    attention = attention.to(device)
    extra = {"logits_to_keep": 1} if accepts_logits_to_keep(model) else {}
    output = model(
        input_ids=input_ids.to(device),
        attention_mask=attention,
        position_ids=positions.to(device),
        past_key_values=cache,
        use_cache=True,
        **extra,
    )
    next_position = torch.tensor([len(context.ids) for context in contexts], dtype=torch.long, device=device)
    return output.logits[:, -1].float(), output.past_key_values, attention, next_position


def _prefill_segments(model, contexts: Sequence[EpisodeContext], pad_id: int, device, token_budget: int | None) -> None:
    """Read every context's new ids but the last into its cache, in chunks of similar
    lengths within ``token_budget`` padded tokens (a context re-read from the start is not
    padded against short segments), and contexts with nothing cached and the same ids (a
    group's first turn) once for all of them. The batched prefill then feeds one id per row."""
    groups: dict[tuple[int, ...], list[EpisodeContext]] = {}
    for context in contexts:
        if len(context.ids) - context.cached > 1:
            key = tuple(context.ids) if context.cache is None else (id(context),)
            groups.setdefault(key, []).append(context)
    members = list(groups.values())
    leaders = [dataclasses.replace(group[0], ids=group[0].ids[:-1]) for group in members]  # all but the last id
    spans = [len(leader.ids) - leader.cached for leader in leaders]
    order = sorted(range(len(leaders)), key=lambda i: (leaders[i].cached, spans[i]))
    for chunk in token_budget_chunks(order, [spans[i] + leaders[i].cached // 4 for i in range(len(leaders))], token_budget):
        _, cache, attention, _ = _prefill(model, [leaders[i] for i in chunk], pad_id, device)
        for row, index in enumerate(chunk):
            mask = attention[row].bool()
            layers = [(layer.keys[row : row + 1, :, mask], layer.values[row : row + 1, :, mask]) for layer in cache.layers]
            for member in members[index]:
                member.cache, member.cached = layers, len(member.ids) - 1


def _decode_cached(model, tokenizer, contexts, rows: list[DecodeRow], config, generator, device) -> None:
    """The token loop over the batch cache; stores each row's cache back in its context."""
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    stops = stop_token_ids(tokenizer, config.stop_at_newline, config.stop_strings)
    token_budget = config.max_batch_tokens or (2048 if device.type == "cpu" else None)
    _prefill_segments(model, contexts, pad_id, device, token_budget)
    logits, cache, attention, next_position = _prefill(model, contexts, pad_id, device, room=max(row.limit for row in rows))
    for _ in range(max(row.limit for row in rows)):
        active = [index for index, row in enumerate(rows) if not row.done]
        tokens = torch.full((len(active),), pad_id, dtype=torch.long, device=device)
        sample_constrained(rows, active, logits[active], tokens, config, generator)
        sample_free(rows, active, logits[active], tokens, config, generator, tokenizer.eos_token_id, stops)
        if all(row.done for row in rows):
            break
        # Rows that just finished do not feed their last token (it starts the next turn's prefill).
        fed = torch.tensor([not rows[index].done for index in active], dtype=torch.long, device=device)
        step_tokens = torch.full((len(rows),), pad_id, dtype=torch.long, device=device)
        step_mask = torch.zeros((len(rows),), dtype=torch.long, device=device)
        active_index = torch.tensor(active, dtype=torch.long, device=device)
        step_tokens[active_index] = tokens
        step_mask[active_index] = fed
        attention = torch.cat([attention, step_mask.unsqueeze(-1)], dim=1)
        cache, logits = decode_step(model, step_tokens, attention, next_position, cache)
        next_position = next_position + step_mask
    _store_caches(contexts, rows, cache, attention)


def _store_caches(contexts, rows, cache, attention) -> None:
    """Cut each row's real entries out of the batch cache into its context's cache."""
    keep = attention.bool()
    for index, context in enumerate(contexts):
        mask = keep[index]
        context.cache = [(layer.keys[index : index + 1, :, mask], layer.values[index : index + 1, :, mask]) for layer in cache.layers]
        context.cached = int(mask.sum())
        # every id of the context plus the response except the last sampled token is cached
        expected = len(context.ids) + len(rows[index].ids) - 1
        if context.cached != expected:
            raise RuntimeError(f"generate_turn: row {index} cached {context.cached} tokens, expected {expected}.")

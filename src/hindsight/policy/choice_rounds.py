"""Greedy constrained choices in rounds, every prompt read once into a KV cache kept across
the rounds (the decoder of the compact analyzer, ``skills.compact_decoding``).

The compact analyzer asks the policy, round after round, to choose one option per live
prompt (a head, then template pieces until END), each choice appended to its prompt's
continuation. One ``generation.generate`` call per round reads every prompt and every
earlier choice again from the start: a round costs a full prefill. ``ChoiceRounds`` reads
each prompt once (``token_loop.prefill``: sorted by length, in chunks within the token
budget ``generate`` uses, identical prompts once), then joins the chunks' caches into one
batch cache (left-padded, preallocated: ``cached_generation.BufferLayer``), so that every
decode step of every round is one forward pass over all live rows:

- a round builds each asked row's trie over its options (``constrained.ActionTrie``: the
  option's ids + EOS) and walks it greedily, one batched ``decode_step`` per token, with
  the same restricted log-softmax and argmax as ``generate`` (``token_loop.sample_constrained``);
  a row whose option is complete (it chose the final EOS) is fed a masked pad while the
  others finish theirs;
- the EOS is never fed: the logits that chose it are the next-token logits of the
  continuation (prompt + chosen ids without EOS), i.e. what the next round starts from;
- rows not asked in a round are dropped from the cache for good (a finished skill never
  comes back).

The choices equal those of one ``generate`` call per round up to float rounding (a cached
decode step against a fresh prefill; ``tests/skills/test_compact_skills.py``). A prompt
whose continuation could outgrow ``max_length`` is not supported here (a cache cannot cut
its oldest tokens): ``fits`` says so, and the caller falls back to the per-round calls.
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import DynamicCache

from hindsight.policy.batching import token_budget_chunks
from hindsight.policy.cached_generation import BufferLayer
from hindsight.policy.constrained import ActionTrie
from hindsight.policy.generation import SamplingConfig
from hindsight.policy.token_loop import DecodeRow, decode_step, model_max_length, prefill, sample_constrained
from hindsight.policy.model import Policy

CPU_BATCH_TOKENS = 2048
"""Padded prompt tokens per prefill chunk on CPU (as ``generation.SamplingConfig.max_batch_tokens``)."""

DECODE_ROOM = 64
"""Cache entries preallocated per row for the rounds' tokens (the buffer doubles when full)."""


class ChoiceRounds:
    """Greedy constrained choices, round after round, over one KV cache per prompt."""

    def __init__(self, policy: Policy, prompt_ids: Sequence[Sequence[int]], max_batch_tokens: int | None = None) -> None:
        """Read every prompt once.

        Args:
            policy: A ``model.Policy``.
            prompt_ids: The prompts' ids (chat template applied), each non-empty.
            max_batch_tokens: Padded prompt tokens per prefill chunk (None: 2048 on CPU,
                unlimited on GPU, as in ``generate``).
        """
        self.model, self.tokenizer = policy.model, policy.tokenizer
        self.device = next(self.model.parameters()).device
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        lengths = [len(ids) for ids in prompt_ids]
        budget = max_batch_tokens or (CPU_BATCH_TOKENS if self.device.type == "cpu" else None)
        order = sorted(range(len(prompt_ids)), key=lambda index: (lengths[index], list(prompt_ids[index])))
        chunks = []
        with torch.no_grad():
            for rows in token_budget_chunks(order, lengths, budget):
                logits, cache, attention, _ = prefill(self.model, [list(prompt_ids[i]) for i in rows], self.pad_id, self.device)
                chunks.append((rows, logits, cache, attention))
        self.rows = [row for rows, *_ in chunks for row in rows]
        """The prompt index of each batch row (rows still live)."""
        width = max(lengths, default=0)
        self.cache = _joined_cache(chunks, width, self.device)
        self.attention = torch.zeros((len(self.rows), width), dtype=torch.long, device=self.device)
        for batch_row, row in enumerate(self.rows):
            self.attention[batch_row, width - lengths[row] :] = 1
        self.next_position = torch.tensor([lengths[row] for row in self.rows], dtype=torch.long, device=self.device)
        self.logits = torch.cat([logits for _, logits, _, _ in chunks]) if chunks else torch.zeros(0)
        """[B, V] float32 next-token logits of each row's continuation."""

    @staticmethod
    def fits(prompt_lengths: Sequence[int], most_new_tokens: int, max_length: int | None, model) -> bool:
        """Whether every prompt plus ``most_new_tokens`` (all its rounds' options, EOS
        included) stays within ``max_length`` (None: the model's maximum), so that no round
        would cut a prompt."""
        limit = max_length or model_max_length(model)
        return max(prompt_lengths, default=0) + most_new_tokens <= limit

    def choose(self, rows: Sequence[int], options: Sequence[Sequence[str]]) -> list[tuple[str, list[int]]]:
        """One greedy constrained choice per asked row, appended to its continuation.

        Args:
            rows: Prompt indices still live (a row left out once is dropped for good).
            options: Per asked row, the texts it may choose among (tokenized like actions,
                each + EOS; "" is EOS alone).

        Returns:
            Per asked row, in order: (the chosen option, its ids without EOS).

        Raises:
            ValueError: A row asked for was dropped in an earlier round.
        """
        asked = dict(zip(rows, options))
        missing = sorted(set(asked) - set(self.rows))
        if missing:
            raise ValueError(f"ChoiceRounds.choose: rows {missing} were dropped in an earlier round")
        with torch.no_grad():
            self._keep([position for position, row in enumerate(self.rows) if row in asked])
            chosen = self._round([asked[row] for row in self.rows]) if self.rows else {}
        return [chosen[row] for row in rows]

    def _keep(self, positions: list[int]) -> None:
        """Keep only these batch rows (cache included)."""
        if len(positions) == len(self.rows):
            return
        index = torch.tensor(positions, dtype=torch.long, device=self.device)
        self.cache.batch_select_indices(index)
        self.rows = [self.rows[position] for position in positions]
        self.attention, self.next_position, self.logits = self.attention[index], self.next_position[index], self.logits[index]

    def _round(self, options: list[Sequence[str]]) -> dict[int, tuple[str, list[int]]]:
        """Walk every row's option trie over the cache (see the module docstring)."""
        config = SamplingConfig(temperature=0.0, constrained=True)
        decoders = [DecodeRow(ActionTrie.from_actions(self.tokenizer, row_options)) for row_options in options]
        for decoder in decoders:
            decoder.limit = decoder.trie.depth
        while True:
            live = [position for position, decoder in enumerate(decoders) if not decoder.done]
            if not live:
                break
            sampled = torch.full((len(live),), self.pad_id, dtype=torch.long, device=self.device)
            sample_constrained(decoders, live, self.logits[live], sampled, config, None)
            feed = [k for k, position in enumerate(live) if not decoders[position].done]
            if not feed:
                break
            fed = torch.tensor([live[k] for k in feed], dtype=torch.long, device=self.device)
            tokens = torch.full((len(decoders),), self.pad_id, dtype=torch.long, device=self.device)
            tokens[fed] = sampled[feed]
            column = torch.zeros((len(decoders), 1), dtype=self.attention.dtype, device=self.device)
            column[fed] = 1
            self.attention = torch.cat([self.attention, column], dim=1)
            self.cache, logits = decode_step(self.model, tokens, self.attention, self.next_position, self.cache)
            self.logits[fed] = logits[fed]
            self.next_position[fed] += 1
        return {row: (decoder.trie.action_for(decoder.ids), decoder.ids[:-1]) for row, decoder in zip(self.rows, decoders)}


def _joined_cache(chunks: list[tuple], width: int, device) -> DynamicCache:
    """The prefill chunks' caches as one batch cache: each row's real entries (its
    attention) right-aligned at ``width``, left-padded, ``DECODE_ROOM`` entries of room."""
    cache = DynamicCache()
    if not chunks:
        return cache
    layers = []
    for layer_index, reference in enumerate(chunks[0][2].layers):
        _, heads, _, dim = reference.keys.shape
        size = sum(len(rows) for rows, *_ in chunks)
        keys = reference.keys.new_zeros((size, heads, width + DECODE_ROOM, dim), device=device)
        values = torch.zeros_like(keys)
        batch_row = 0
        for rows, _, chunk_cache, attention in chunks:
            layer = chunk_cache.layers[layer_index]
            for position in range(len(rows)):
                real = attention[position].bool()
                count = int(real.sum())
                keys[batch_row, :, width - count : width] = layer.keys[position][:, real]
                values[batch_row, :, width - count : width] = layer.values[position][:, real]
                batch_row += 1
        layers.append(BufferLayer(keys, values, width))
    cache.layers = layers
    return cache

"""The token loop's pieces, shared by the three decoders (``generation.generate``,
``cached_generation`` for the multi-turn layout, ``choice_rounds`` for option rounds).

``DecodeRow`` is one sequence's decoding state (its trie node for a constrained row, the ids,
T=1 log-probs and allowed ids sampled so far, its token limit); ``prefill`` reads the
unique prompts once into a KV cache (identical prompts share a row, the cache expanded to
every row); ``decode_step`` feeds one token per row; ``sample_constrained`` and
``sample_free`` choose the next token of the constrained (trie) and the free rows and
record its log-prob; ``model_max_length`` is the model's context length.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from hindsight.policy.constrained import ActionTrie, pad_allowed, restricted_log_softmax, sample_from_logprobs
from hindsight.policy.encoding import StepSample, collate
from hindsight.policy.logprobs import accepts_logits_to_keep
from hindsight.policy.screens import image_forward_inputs, last_positions


def model_max_length(model) -> int:
    """The model's context length (``max_position_embeddings``, its text model's for an
    image-text-to-text model; 2048 when unset), through a peft wrapper too."""
    config = model.get_base_model().config if hasattr(model, "get_base_model") else model.config
    if not hasattr(config, "max_position_embeddings") and hasattr(config, "text_config"):
        config = config.text_config
    return int(getattr(config, "max_position_embeddings", 2048))


class DecodeRow:
    """Decoding state of one sequence."""

    def __init__(self, trie: ActionTrie | None) -> None:
        self.trie = trie
        self.prompt_ids: list[int] = []  # the prompt ids read, after truncation (set by the decoder)
        self.dropped = 0  # oldest prompt tokens dropped to fit max_length
        self.node = trie.root if trie is not None else None
        self.ids: list[int] = []
        self.logprobs: list[float] = []
        self.allowed: list[list[int]] | None = [] if trie is not None else None
        self.finished = False  # ended with a stop token
        self.limit = 0  # most tokens this row may take (set by the decoder)
        self.image = None  # the step's screenshot (a vision policy's ``screens.ScreenImage``)

    @property
    def done(self) -> bool:
        return self.finished or len(self.ids) >= self.limit


def prefill(model, prompt_ids: list[list[int]], pad_id: int, device, images=None):
    """Run the unique prompts once; return (last logits [B, V], cache, attention, next positions).
    ``images``: per prompt its screenshot or None (a prompt is unique with its screenshot)."""
    if images is None:
        unique: dict = {}
        representative = [unique.setdefault(tuple(ids), len(unique)) for ids in prompt_ids]
        batch = collate([StepSample(prompt_ids=list(ids), response_ids=[]) for ids in unique], pad_id).to(device)
    else:
        unique = {}
        keys = [(tuple(ids), image.key if image is not None else None) for ids, image in zip(prompt_ids, images)]
        representative = [unique.setdefault(key, (len(unique), image))[0] for key, image in zip(keys, images)]
        rows = [StepSample(prompt_ids=list(ids), response_ids=[], image=image) for (ids, _), (_, image) in unique.items()]
        batch = collate(rows, pad_id).to(device)
    input_ids, attention, positions = batch.input_ids, batch.attention_mask, batch.position_ids
    extra = {"logits_to_keep": 1} if accepts_logits_to_keep(model) else {}
    if batch.images is not None:
        pixels, positions = image_forward_inputs(model, input_ids, attention, positions, batch.images)
        extra.update(pixels)
    output = model(
        input_ids=input_ids,
        attention_mask=attention,
        position_ids=positions,
        past_key_values=DynamicCache(),
        use_cache=True,
        **extra,
    )
    cache = output.past_key_values
    index = torch.tensor(representative, dtype=torch.long, device=device)
    if len(unique) < len(prompt_ids):
        cache.reorder_cache(index)
    return output.logits[:, -1].float()[index], cache, attention[index], last_positions(positions)[index] + 1


def decode_step(model, tokens: torch.Tensor, attention: torch.Tensor, positions: torch.Tensor, cache):
    """One batched decode step: feed one token per row ([B]) at ``positions`` ([B]) over the
    KV ``cache`` and the ``attention`` mask that already includes it; returns the updated
    cache and the next-token logits [B, V] in fp32."""
    output = model(
        input_ids=tokens.unsqueeze(-1),
        attention_mask=attention,
        position_ids=positions.unsqueeze(-1),
        past_key_values=cache,
        use_cache=True,
    )
    return output.past_key_values, output.logits[:, -1].float()


def sample_constrained(rows, live, logits, tokens, config, generator) -> None:
    """The next token of every live constrained row (``rows[live[i]]`` with a trie): sampled
    over the trie node's ids only, renormalised; written to ``tokens`` and the row."""
    positions = [position for position, index in enumerate(live) if rows[index].trie is not None]
    if not positions:
        return
    allowed_lists = [sorted(rows[live[position]].node) for position in positions]
    allowed = pad_allowed(allowed_lists, logits.device)
    logprobs = restricted_log_softmax(logits[positions], allowed)
    columns = sample_from_logprobs(logprobs, temperature=config.temperature, top_p=config.top_p, generator=generator)
    chosen = torch.gather(allowed, 1, columns.unsqueeze(-1)).squeeze(-1)
    chosen_logprobs = torch.gather(logprobs, 1, columns.unsqueeze(-1)).squeeze(-1)
    tokens[positions] = chosen
    for position, token, logprob, allowed_here in zip(positions, chosen.tolist(), chosen_logprobs.tolist(), allowed_lists):
        row = rows[live[position]]
        row.ids.append(token)
        row.logprobs.append(logprob)
        row.allowed.append(allowed_here)
        row.node = row.node[token]
        row.finished = not row.node


def sample_free(rows, live, logits, tokens, config, generator, eos_id, stops) -> None:
    """The next token of every live free row: over the whole vocabulary (stops banned before
    ``min_new_tokens``); the row finishes at EOS or a stop token."""
    positions = [position for position, index in enumerate(live) if rows[index].trie is None]
    if not positions:
        return
    row_logits = logits[positions]  # a copy (list index): masking it leaves ``logits`` as it is
    early = [i for i, position in enumerate(positions) if len(rows[live[position]].ids) < config.min_new_tokens]
    if early:
        banned_ids = set(stops) | ({eos_id} if eos_id is not None else set())
        banned = torch.tensor(sorted(banned_ids), dtype=torch.long, device=logits.device)
        row_logits[torch.tensor(early, device=logits.device).unsqueeze(-1), banned.unsqueeze(0)] = float("-inf")
    logprobs = torch.log_softmax(row_logits, dim=-1)
    chosen = sample_from_logprobs(logprobs, temperature=config.temperature, top_p=config.top_p, generator=generator)
    chosen_logprobs = torch.gather(logprobs, 1, chosen.unsqueeze(-1)).squeeze(-1)
    tokens[positions] = chosen
    for position, token, logprob in zip(positions, chosen.tolist(), chosen_logprobs.tolist()):
        row = rows[live[position]]
        row.ids.append(token)
        row.logprobs.append(logprob)
        row.finished = token == eos_id or token in stops

"""Decoding restricted to the valid actions: a token trie and renormalised sampling.

A small policy trained from scratch cannot reliably copy object names, so by default its
actions are decoded through a trie over the tokenized valid actions (each action's ids
followed by EOS): at every position only the tokens that continue some valid action are
allowed, and the policy's distribution is renormalised over them. Every decoded response is
then exactly the canonical tokenization of one valid action plus EOS, so re-tokenizing the
action text gives back the same ids.

The allowed sets depend only on the valid actions and the response prefix, never on the
prompt, so a scorer can rebuild them (``ActionTrie.allowed_along``) to score the same
response under another prompt (the skill-augmented one) under the same restriction.

Free generation is restricted only at its end: ``stop_token_ids`` are the tokens that close a
row (a newline, a stop string), cached on the tokenizer object.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Sequence

import torch

logger = logging.getLogger(__name__)


@lru_cache(maxsize=65536)
def _action_ids(tokenizer, action: str) -> tuple[int, ...]:
    """Token ids of one action (cached: the same actions come back step after step)."""
    return tuple(tokenizer(action, add_special_tokens=False)["input_ids"])


class ActionTrie:
    """A prefix tree over token sequences; a node is a dict ``token id -> child node``."""

    def __init__(self, sequences: Sequence[Sequence[int]]) -> None:
        """Build the trie.

        Args:
            sequences: Token id sequences (each valid action's ids + EOS).

        Raises:
            ValueError: No non-empty sequence was given.
        """
        self.root: dict[int, dict] = {}
        self.actions: dict[tuple[int, ...], str] = {}
        self.depth = 0
        """Length of the longest sequence (the most tokens a response can take)."""
        for sequence in sequences:
            node = self.root
            for token in sequence:
                node = node.setdefault(int(token), {})
            self.depth = max(self.depth, len(sequence))
        if not self.root:
            raise ValueError("ActionTrie: no non-empty action sequence to build a trie from.")

    @classmethod
    def from_actions(cls, tokenizer, actions: Sequence[str]) -> "ActionTrie":
        """The trie over ``actions`` tokenized like responses (no special tokens, + EOS)."""
        unique = list(dict.fromkeys(str(action) for action in actions))
        if not unique:
            raise ValueError("ActionTrie.from_actions: the list of valid actions is empty.")
        encoded = [list(_action_ids(tokenizer, action)) for action in unique]
        trie = cls([ids + [tokenizer.eos_token_id] for ids in encoded])
        for action, ids in zip(unique, encoded):
            trie.actions.setdefault(tuple(ids) + (tokenizer.eos_token_id,), action)
        return trie

    def action_for(self, response_ids: Sequence[int]) -> str | None:
        """The action text whose ids (+ EOS) are ``response_ids`` (None if not a full action)."""
        return self.actions.get(tuple(int(token) for token in response_ids))

    def node(self, prefix: Sequence[int]) -> dict[int, dict] | None:
        """The node reached by ``prefix`` (``None`` when the prefix leaves the trie)."""
        node = self.root
        for token in prefix:
            node = node.get(int(token))
            if node is None:
                return None
        return node

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """Sorted token ids that may follow ``prefix`` ([] at a leaf or off the trie)."""
        node = self.node(prefix)
        return sorted(node) if node else []

    def allowed_along(self, response_ids: Sequence[int]) -> list[list[int]]:
        """The allowed ids at every position of a full response (for re-scoring).

        Raises:
            ValueError: The response is not a path of the trie.
        """
        allowed, node = [], self.root
        for position, token in enumerate(response_ids):
            if not node or int(token) not in node:
                raise ValueError(f"ActionTrie.allowed_along: token {int(token)} at position {position} is not allowed.")
            allowed.append(sorted(node))
            node = node[int(token)]
        return allowed


TOKEN_CACHE_ATTRIBUTE = "_hindsight_containing_token_cache"
"""The tokenizer attribute holding its ``token_ids_containing`` answers (the cache lives and
dies with the tokenizer object, so a new tokenizer never sees another one's answers)."""


def token_ids_containing(tokenizer, substring: str) -> frozenset[int]:
    """Token ids whose text contains ``substring`` (computed once per tokenizer, vocabulary
    size and string; kept on the tokenizer itself)."""
    cache = vars(tokenizer).setdefault(TOKEN_CACHE_ATTRIBUTE, {})
    key = (len(tokenizer), substring)
    if key not in cache:
        texts = tokenizer.batch_decode([[index] for index in range(len(tokenizer))])
        cache[key] = frozenset(index for index, text in enumerate(texts) if substring in text)
    return cache[key]


def stop_token_ids(tokenizer, stop_at_newline: bool, stop_strings: Sequence[str] = ()) -> frozenset[int]:
    """The ids that end a free-generation row besides EOS: tokens containing a newline (when
    ``stop_at_newline``) and tokens containing any of ``stop_strings``."""
    stops = token_ids_containing(tokenizer, "\n") if stop_at_newline else frozenset()
    for substring in stop_strings:
        stops = stops | token_ids_containing(tokenizer, substring)
    return stops


def pad_allowed(allowed: Sequence[Sequence[int]], device: torch.device | str = "cpu") -> torch.Tensor:
    """Allowed id lists as a long tensor [B, A] padded with -1."""
    width = max((len(ids) for ids in allowed), default=1) or 1
    table = torch.full((len(allowed), width), -1, dtype=torch.long)
    for row, ids in enumerate(allowed):
        if ids:
            table[row, : len(ids)] = torch.tensor(list(ids), dtype=torch.long)
    return table.to(device)


def restricted_log_softmax(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Log-probabilities renormalised over the allowed ids only.

    Args:
        logits: [..., V] float logits.
        allowed: [..., A] long ids, -1 for padding.

    Returns:
        [..., A] log-probs of the allowed ids (``-inf`` at padding). Uses a gather over A
        ids, never a [..., V] mask, so it stays cheap for 150k-token vocabularies.
    """
    valid = allowed >= 0
    gathered = torch.gather(logits, -1, allowed.clamp(min=0)).float()
    gathered = gathered.masked_fill(~valid, float("-inf"))
    return gathered - torch.logsumexp(gathered, dim=-1, keepdim=True)


def sample_from_logprobs(
    logprobs: torch.Tensor,
    *,
    temperature: float,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Sample one column per row from [B, K] log-probs (``-inf`` = excluded).

    ``temperature <= 0`` is greedy (argmax). Otherwise the distribution is sharpened to
    ``softmax(logprobs / temperature)`` and cut to the top-p nucleus before sampling.

    Returns:
        [B] long column indices.
    """
    if temperature <= 0:
        return logprobs.argmax(dim=-1)
    scaled = torch.softmax(logprobs / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = torch.sort(scaled, dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
        sorted_probs = sorted_probs.masked_fill(mass_before >= top_p, 0.0)
        scaled = torch.zeros_like(scaled).scatter(-1, order, sorted_probs)
    scaled = scaled / scaled.sum(dim=-1, keepdim=True)
    device_generator_ok = generator is None or generator.device == scaled.device
    source = scaled if device_generator_ok else scaled.cpu()
    return torch.multinomial(source, 1, generator=generator).squeeze(-1).to(scaled.device)

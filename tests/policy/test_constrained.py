"""The action trie, sampling renormalised over the allowed tokens, and the stop-token sets."""

from __future__ import annotations

import pytest
import torch

from hindsight.policy.constrained import (
    TOKEN_CACHE_ATTRIBUTE,
    ActionTrie,
    pad_allowed,
    restricted_log_softmax,
    sample_from_logprobs,
    stop_token_ids,
    token_ids_containing,
)

pytestmark = pytest.mark.unit


def test_trie_allows_exactly_the_continuations_of_valid_actions(tokenizer):
    actions = ["take dirty teal dress", "take dirty green T-shirt", "look around", "look around"]
    trie = ActionTrie.from_actions(tokenizer, actions)
    encoded = {a: tokenizer(a, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for a in actions}
    assert trie.allowed([]) == sorted({ids[0] for ids in encoded.values()})
    for action, ids in encoded.items():
        assert trie.action_for(ids) == action
        for position in range(len(ids)):
            continuing = [other for other in encoded.values() if len(other) > position]
            expected = sorted({other[position] for other in continuing if other[:position] == ids[:position]})
            assert trie.allowed(ids[:position]) == expected
        assert trie.allowed(ids) == []  # a finished action allows nothing more
        assert trie.allowed_along(ids)[0] == trie.allowed([])
    assert trie.depth == max(len(ids) for ids in encoded.values())
    with pytest.raises(ValueError, match="not allowed"):
        trie.allowed_along([tokenizer.eos_token_id])
    with pytest.raises(ValueError, match="empty"):
        ActionTrie.from_actions(tokenizer, [])


def test_restricted_log_softmax_renormalises_over_allowed_ids():
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    allowed = pad_allowed([[1, 7, 9], [4], [0, 49]])
    logprobs = restricted_log_softmax(logits, allowed)
    assert torch.allclose(torch.logsumexp(logprobs, dim=-1), torch.zeros(3), atol=1e-6)
    assert logprobs[1, 0].item() == pytest.approx(0.0) and torch.isinf(logprobs[1, 1:]).all()
    expected = torch.log_softmax(logits[0, [1, 7, 9]], dim=-1)
    assert torch.allclose(logprobs[0], expected, atol=1e-6)


def test_sampling_never_picks_excluded_columns_and_greedy_is_argmax():
    logprobs = torch.log(torch.tensor([[0.5, 0.3, 0.2, 0.0]] * 200))
    generator = torch.Generator().manual_seed(0)
    picks = sample_from_logprobs(logprobs, temperature=1.0, generator=generator)
    assert set(picks.tolist()) == {0, 1, 2}
    assert (sample_from_logprobs(logprobs, temperature=0.0) == 0).all()
    nucleus = sample_from_logprobs(logprobs, temperature=1.0, top_p=0.5, generator=generator)
    assert (nucleus == 0).all()
    cold = sample_from_logprobs(logprobs, temperature=0.05, generator=generator)
    assert (cold == 0).float().mean() > 0.99


class _ListTokenizer:
    """A tokenizer stand-in whose token ``i`` decodes to ``pieces[i]``."""

    def __init__(self, pieces):
        self.pieces = list(pieces)

    def __len__(self):
        return len(self.pieces)

    def batch_decode(self, rows):
        return [self.pieces[row[0]] for row in rows]


def test_stop_token_sets_are_cached_on_each_tokenizer_object():
    first = _ListTokenizer(["a", "b\n", "c\"", "d"])
    assert token_ids_containing(first, "\n") == {1}
    assert stop_token_ids(first, True, ('"',)) == {1, 2}
    assert stop_token_ids(first, False) == frozenset()
    assert set(vars(first)[TOKEN_CACHE_ATTRIBUTE]) == {(4, "\n"), (4, '"')}
    # Another tokenizer (whatever its address) starts with its own, empty cache.
    second = _ListTokenizer(["\n", "x", "y", "z"])
    assert TOKEN_CACHE_ATTRIBUTE not in vars(second)
    assert token_ids_containing(second, "\n") == {0}
    # A tokenizer that grows gets its answer recomputed.
    first.pieces.append("e\n")
    assert token_ids_containing(first, "\n") == {1, 4}

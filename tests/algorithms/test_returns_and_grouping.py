"""Known-answer tests of discounted returns (with EMPO breaks) and anchor-state groups."""

import difflib

import pytest
import torch

from hindsight.algorithms import anchor_state_groups, discounted_returns

pytestmark = pytest.mark.unit


def test_discounted_returns_per_trajectory():
    # t1: rewards [0, 0, 1] with gamma 0.5 -> [0.25, 0.5, 1]; t2: [2, 1] -> [2.5, 1]
    returns = discounted_returns([0, 0, 1, 2, 1], ["t1", "t1", "t1", "t2", "t2"], 0.5)
    assert torch.allclose(returns, torch.tensor([0.25, 0.5, 1.0, 2.5, 1.0]))


def test_discounted_returns_interleaved_trajectories():
    returns = discounted_returns([1, 2, 1, 2], ["a", "b", "a", "b"], 0.9)
    assert torch.allclose(returns, torch.tensor([1.9, 3.8, 1.0, 2.0]))


def test_discounted_returns_break_at_mismatch():
    # rewards [1, 1, 1, 1], gamma 0.5, mismatch at step 2, as UI-S1's official code walks it:
    # G3 = 1; G2 = r2 = 1 and the running return restarts at 0; G1 = 1 + 0.5 * 0 = 1; G0 = 1 + 0.5 = 1.5
    returns = discounted_returns([1.0, 1.0, 1.0, 1.0], ["t"] * 4, 0.5, break_mask=[False, False, True, False])
    assert torch.allclose(returns, torch.tensor([1.5, 1.0, 1.0, 1.0]))  # was [1.75, 1.5, 1, 1] before the fix
    no_break = discounted_returns([1.0, 1.0, 1.0, 1.0], ["t"] * 4, 0.5)
    assert torch.allclose(no_break, torch.tensor([1.875, 1.75, 1.5, 1.0]))


def test_discounted_returns_length_mismatch_is_clear():
    with pytest.raises(ValueError, match="break_mask has 1"):
        discounted_returns([1.0, 1.0], ["t", "t"], 0.5, break_mask=[True])


def test_anchor_groups_exact_inside_task_groups():
    groups = anchor_state_groups(
        ["kitchen", "hall", "kitchen", "kitchen", "hall"], ["g1", "g1", "g1", "g2", "g2"]
    )
    # same observation in another task group is another step group
    assert groups == [0, 1, 0, 2, 3]


def test_anchor_groups_fuzzy_first_matching_cluster():
    base = "You are in the kitchen. You see a fridge and a table."
    close = "You are in the kitchen. You see a fridge and a tables."
    far = "You are in the hall."
    assert difflib.SequenceMatcher(None, base, close).ratio() >= 0.95
    assert difflib.SequenceMatcher(None, base, far).ratio() < 0.95
    assert anchor_state_groups([base, close, far, close], ["g"] * 4) == [0, 1, 2, 1]
    assert anchor_state_groups([base, close, far, close], ["g"] * 4, similarity_threshold=0.95) == [0, 0, 1, 0]


def test_anchor_groups_fuzzy_joins_first_cluster_not_best():
    # "aaaa" and "aabb" are separate clusters at 0.6 (ratio 0.5). "aaabb" matches both
    # (0.667 and 0.889): it joins the FIRST cluster, not the most similar one.
    assert difflib.SequenceMatcher(None, "aaaa", "aabb").ratio() == 0.5
    assert difflib.SequenceMatcher(None, "aaaa", "aaabb").ratio() == pytest.approx(6 / 9)
    assert difflib.SequenceMatcher(None, "aabb", "aaabb").ratio() == pytest.approx(8 / 9)
    assert anchor_state_groups(["aaaa", "aabb", "aaabb"], ["g"] * 3, similarity_threshold=0.6) == [0, 1, 0]
    # representatives are the clusters' first members: "abcdx" joins "abcd" at 0.8 (ratio 8/9),
    # then "abcdxy" is compared with "abcd" (ratio 0.8) and joins too.
    assert anchor_state_groups(["abcd", "abcdx", "abcdxy"], ["g"] * 3, similarity_threshold=0.8) == [0, 0, 0]
    assert anchor_state_groups(["abcd", "abcdx", "abcdxyz"], ["g"] * 3, similarity_threshold=0.8) == [0, 0, 1]

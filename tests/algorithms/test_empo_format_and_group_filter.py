"""EMPO's format term on known responses (with and without a thought) and the group
filter's low-spread groups on known scores."""

from __future__ import annotations

import pytest

from hindsight.algorithms import empo_format_ok, has_thought, low_std_groups

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "response",
    [
        "Thought: the egg is in the fridge.\nAction: open fridge",
        "  thought:  cold food is kept north\n  ACTION: go north \n",
        "Thought: first line\nsecond line of the same thought\nAction: take egg",
    ],
)
def test_a_well_formed_thought_earns_the_format_term(response):
    assert has_thought(response)
    assert empo_format_ok(response, "whatever was parsed") is True
    assert empo_format_ok(response, "x", thought_required=True) is True


@pytest.mark.parametrize(
    "response",
    [
        "Thought:\nAction: open fridge",  # empty thought
        "Thought:   \t\nAction: open fridge",  # blank thought
        "Thought: the egg is in the fridge. Action: open fridge",  # action on the thought's line
        "Thought: the egg is in the fridge.",  # no action after it
        "Thought: the egg is cold.\nAction:   ",  # empty action
        "Thought: the egg is cold.\nAction: the",  # unparsable action (nothing left after normalising)
        "Action: open fridge\nThought: because",  # markers out of order
        "I think the egg is cold.\nAction: open fridge",  # free text before the action, no marker
        "note\nThought: cold.\nAction: open fridge",  # text before the marker
        "Thought: a\nThought: b\nAction: open fridge",  # a second thought marker
        "Thought: a\nAction: go north\nAction: open fridge",  # two action lines
        "Thought: a\nAction: open fridge\nand then take the egg",  # text after the action line
    ],
)
def test_a_missing_empty_or_garbled_thought_fails_the_format_term(response):
    assert has_thought(response)
    assert empo_format_ok(response, "open fridge") is False


def test_a_response_without_a_thought_keeps_the_plain_check():
    assert not has_thought("open fridge") and not has_thought("Action: open fridge")
    assert empo_format_ok("open fridge", "open fridge") is True  # constrained decoding: the response is the action
    assert empo_format_ok("Action: open fridge", "open fridge") is True
    assert empo_format_ok("", "") is False and empo_format_ok(None, None) is False
    assert empo_format_ok("the", "the") is False  # parsed to nothing
    # a layout that asks for a thought refuses a bare action
    assert empo_format_ok("open fridge", "open fridge", thought_required=True) is False


def test_low_std_groups_lists_the_flat_groups_below_the_threshold():
    scores = [1.0, 1.0, 1.0, 0.0, 1.0, 0.2, 0.3, 5.0]
    groups = ["flat", "flat", "flat", "varied", "varied", "close", "close", "single"]
    # population stds: flat 0, varied 0.5, close 0.05, single (one episode) never listed
    assert low_std_groups(scores, groups, 0.3) == ["flat", "close"]
    assert low_std_groups(scores, groups, 0.04) == ["flat"]
    assert low_std_groups(scores, groups, 0.6) == ["flat", "varied", "close"]
    assert low_std_groups(scores, groups, 0.0) == []  # 0: off, a flat group included
    with pytest.raises(ValueError, match="min_std must be >= 0"):
        low_std_groups(scores, groups, -0.1)

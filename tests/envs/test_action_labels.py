"""Every environment labels a played episode's optimal actions: by default the gold
sequence's next action along its prefix (a proxy), on TextWorldExpress coin exactly, from
the game's map."""

from __future__ import annotations

from typing import Any

import pytest

from hindsight.envs import make_env
from hindsight.envs.action_labels import LABEL_SOURCES, ActionLabels, gold_next_labels, label_episode
from hindsight.envs.base import EnvironmentSpec, StepResult, ToyEnvironment

TWC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0})
HIDDEN_ROOMS = EnvironmentSpec(  # conf/hidden_rooms' game
    "textworldexpress", "coin", {"numLocations": 6, "numDistractorItems": 3, "includeDoors": 1, "limitInventorySize": 0}, max_steps=20
)


class Counter(ToyEnvironment):
    """Count to three: the gold sequence is "one", "two", "three"."""

    GOLD = ("one", "two", "three")

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        self.resets = getattr(self, "resets", 0) + 1
        return "Count.", {}

    def step(self, action: str) -> StepResult:
        return "Counted.", 0.0, False, False, {}


class NoGold(Counter):
    """A game with no gold sequence."""

    GOLD = ()


class GoldRefused(Counter):
    """A game whose gold sequence cannot be asked for."""

    def gold_actions(self) -> list[str]:
        raise NotImplementedError


def test_the_gold_next_proxy_labels_the_gold_prefix_and_nothing_after_a_deviation():
    env = Counter()
    labels = label_episode(env, 0, "train", ["One", "two ", "four", "three"])
    assert env.resets == 1
    assert labels == ActionLabels("gold_next", (frozenset({"one"}), frozenset({"two"}), frozenset({"three"}), None))
    assert labels.is_optimal(0, "ONE") and labels.is_optimal(2, "four") is False and labels.is_optimal(3, "three") is None
    past_the_gold = gold_next_labels(Counter.GOLD, ["one", "two", "three", "one"])
    assert past_the_gold.optimal[3] is None and None not in past_the_gold.optimal[:3]
    assert label_episode(env, 0, "train", []) == ActionLabels("gold_next", ())


def test_an_environment_without_a_gold_sequence_has_no_labels():
    assert label_episode(NoGold(), 0, "train", ["one"]) is None
    assert label_episode(GoldRefused(), 0, "train", ["one"]) is None
    with pytest.raises(ValueError, match="source"):
        ActionLabels("oracle", ())
    assert LABEL_SOURCES == ("map", "gold_next")


def test_twc_labels_the_gold_first_action_and_coin_labels_from_the_map():
    env = make_env(TWC)
    try:
        seed = env.seeds("train", 1)[0]
        env.reset(seed, "train")
        gold = env.gold_actions()
        labels = label_episode(env, seed, "train", ["inventory", gold[0]])
    finally:
        env.close()
    assert labels.source == "gold_next" and labels.optimal == (frozenset({gold[0]}), None)
    coin = make_env(HIDDEN_ROOMS)
    try:
        seed = coin.seeds("train", 1)[0]
        coin.reset(seed, "train")
        gold = coin.gold_actions()
        labels = label_episode(coin, seed, "train", ["look around"] + gold)
    finally:
        coin.close()
    assert labels.source == "map" and len(labels.optimal) == len(gold) + 1
    assert gold[0] in labels.optimal[0] and labels.optimal[0] == labels.optimal[1]

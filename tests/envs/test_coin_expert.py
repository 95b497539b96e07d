"""TextWorldExpress coin's expert is a function of the game: the shortest way to the coin
through the map a fixed-order walk finds, the same sequence on every call (the simulator's
own sequence is drawn afresh each time), and it wins."""

from __future__ import annotations

import pytest

from hindsight.data.expert import play_gold_episode
from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.coin_expert import TAKE_COIN, CoinMap, room_name, walk_map

HIDDEN_ROOMS = EnvironmentSpec(
    "textworldexpress", "coin", {"numLocations": 6, "numDistractorItems": 3, "includeDoors": 1, "limitInventorySize": 0}, max_steps=20
)


def test_the_path_is_the_shortest_through_the_map_with_its_doors_opened():
    found = CoinMap()
    found.exits = {"kitchen": {"north": "hall", "east": "pantry"}, "hall": {"south": "kitchen", "east": "study"},
                   "pantry": {"west": "kitchen", "north": "study"}, "study": {"west": "hall", "south": "pantry"}}
    found.opened = {("kitchen", "north"), ("hall", "south"), ("hall", "east"), ("study", "west")}
    found.coin_room = "study"
    assert found.path("kitchen") == ["open door to north", "move north", "open door to east", "move east", TAKE_COIN]
    assert found.path("study") == [TAKE_COIN]
    assert CoinMap().path("kitchen") == []  # the walk never saw the coin
    assert room_name("You are in the living room. You see a sofa.") == "living room" and room_name("You open the door.") is None


def test_the_walk_refuses_a_start_with_no_room():
    with pytest.raises(ValueError, match="no room"):
        walk_map("A dark place.", [], lambda action: ("", []))


def test_the_coin_expert_is_the_same_on_every_call_and_wins():
    env = make_env(HIDDEN_ROOMS)
    try:
        seeds = env.seeds("train", 20)
        first = {seed: (env.reset(seed, "train"), env.gold_actions())[1] for seed in seeds}
        again = {seed: (env.reset(seed, "train"), env.gold_actions())[1] for seed in reversed(seeds)}
        assert first == again
        episodes = [play_gold_episode(env, HIDDEN_ROOMS, "train", seed) for seed in seeds]
    finally:
        env.close()
    assert all(rows[-1]["won"] for rows in episodes)
    assert all(len(rows) == len(first[seed]) for rows, seed in zip(episodes, seeds))  # straight to the coin, no step wasted
    assert any(rows[0]["action"].startswith("open door") for rows in episodes)  # some coins lie behind closed doors


def test_the_coin_expert_is_asked_for_before_the_first_step():
    env = make_env(HIDDEN_ROOMS)
    try:
        seed = env.seeds("train", 1)[0]
        env.reset(seed, "train")
        env.step("look around")
        with pytest.raises(RuntimeError, match="before the first step"):
            env.gold_actions()
    finally:
        env.close()

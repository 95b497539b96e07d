"""The coin state model's optimal actions are exactly those on a shortest way to the coin:
checked against a plain exhaustive search on small hand-made maps, on a tie worked out by
hand, and on the real game (TextWorldExpress coin with conf/hidden_rooms' parameters),
where the expert's every action is optimal, every optimal action is valid, and after a
detour into a dead end going back is what is optimal."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

import pytest
import yaml

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.coin_expert import DIRECTIONS, OPPOSITE, TAKE_COIN, CoinMap
from hindsight.envs.coin_optimal import CoinModel, CoinState, label_play

CONF = Path(__file__).resolve().parents[2] / "conf" / "hidden_rooms" / "parameters.yml"
ACTIONS = [TAKE_COIN, "look around"] + [
    text for d in DIRECTIONS for text in (f"move {d}", f"open door to {d}", f"close door to {d}")
]
DEPTH = 14


def make_map(passages: list[tuple[str, str, str]], doors: list[tuple[str, str, str]], coin: str | None) -> CoinMap:
    """A map from (room, direction, neighbour) ways out without and with a door, both ways."""
    found = CoinMap()
    for room, direction, neighbour in passages + doors:
        found.exits.setdefault(room, {})[direction] = neighbour
        found.exits.setdefault(neighbour, {})[OPPOSITE[direction]] = room
    for room, direction, neighbour in doors:
        found.opened |= {(room, direction), (neighbour, OPPOSITE[direction])}
    found.coin_room = coin
    return found


SQUARE = make_map(  # two ways from the kitchen to the study, each through one door: a tie
    [("kitchen", "east", "pantry"), ("hall", "east", "study")],
    [("kitchen", "north", "hall"), ("pantry", "north", "study")],
    "study",
)
MAPS = {
    "square": SQUARE,
    "two rooms": make_map([], [("a", "east", "b")], "b"),
    "branches and a cycle": make_map(
        [("b", "east", "c"), ("e", "south", "c"), ("a", "south", "f")],
        [("a", "east", "b"), ("b", "north", "d"), ("d", "east", "e")],
        "e",
    ),
    "corridor": make_map([("a", "north", "b"), ("b", "north", "c")], [("c", "east", "d")], "a"),
    "no coin": make_map([("a", "north", "b")], [], None),
}


def plain_next(found: CoinMap, state: tuple, action: str) -> tuple | None:
    """The game's rules written out plainly (a door is the set of its two sides)."""
    room, open_doors, taken = state
    if taken:
        return None
    if action == TAKE_COIN:
        return (room, open_doors, True) if room == found.coin_room else None
    if action == "look around":
        return state
    direction = action.split()[-1]
    neighbour = found.exits.get(room, {}).get(direction)
    if neighbour is None:
        return None
    door = frozenset({(room, direction), (neighbour, OPPOSITE[direction])}) if (room, direction) in found.opened else None
    if action.startswith("move"):
        return state if door is not None and door not in open_doors else (neighbour, open_doors, taken)
    if door is None:
        return None
    return (room, open_doors | {door} if action.startswith("open") else open_doors - {door}, taken)


def brute_search(found: CoinMap) -> Callable[[tuple], int | None]:
    """The fewest actions from a state to the coin taken, trying every action sequence up
    to ``DEPTH`` long (remembering what a state and a depth left gave); None past it."""

    @functools.cache
    def shortest(state: tuple, depth: int) -> float:
        if state[2]:
            return 0
        if depth == 0:
            return float("inf")
        afters = [plain_next(found, state, action) for action in ACTIONS]
        return 1 + min((shortest(after, depth - 1) for after in afters if after is not None), default=float("inf"))

    def fewest(state: tuple) -> int | None:
        best = shortest(state, DEPTH)
        return None if best == float("inf") else int(best)

    return fewest


def reachable(found: CoinMap, start: str) -> set[tuple]:
    """Every state the plain rules reach from ``start``."""
    seen, todo = {(start, frozenset(), False)}, [(start, frozenset(), False)]
    while todo:
        state = todo.pop()
        for action in ACTIONS:
            after = plain_next(found, state, action)
            if after is not None and after not in seen:
                seen.add(after)
                todo.append(after)
    return seen


@pytest.mark.parametrize("name", sorted(MAPS))
def test_the_optimal_actions_are_those_an_exhaustive_search_finds(name):
    found = MAPS[name]
    model, brute_shortest = CoinModel(found), brute_search(found)
    checked = 0
    for start in found.exits:
        for state in reachable(found, start):
            best = brute_shortest(state)
            assert model.distance(CoinState(*state)) == best
            for action in ACTIONS:
                assert model.next_state(CoinState(*state), action) == plain_next(found, state, action)
            if best is None or best == 0:
                assert model.optimal_actions(CoinState(*state)) == frozenset()
                continue
            expected = {
                action for action in ACTIONS
                if (after := plain_next(found, state, action)) is not None and brute_shortest(after) == best - 1
            }
            assert model.optimal_actions(CoinState(*state)) == expected, (name, state)
            checked += 1
    assert checked > 0 or name == "no coin"


def test_two_equally_short_ways_make_both_first_actions_optimal():
    model = CoinModel(SQUARE)
    start = CoinState("kitchen")
    assert model.distance(start) == 4  # open door to north, move north, move east, take coin; or the pantry's way
    assert model.optimal_actions(start) == {"open door to north", "move east"}
    opened = model.next_state(start, "open door to north")
    assert model.optimal_actions(opened) == {"move north"}
    assert model.next_state(start, "move north") == start  # a closed door blocks the way
    assert model.next_state(start, "open door to east") is None  # no door there


def test_a_play_is_labelled_until_the_model_cannot_follow_it_or_the_coin_is_taken():
    model = CoinModel(SQUARE)
    both, door = {"open door to north", "move east"}, {"open door to north"}
    labels = label_play(model, "kitchen", ["Move  East", "look around", "move west", "move north", "take coin", "look around"])
    assert labels == (both, door, door, both, both, None)  # "move north": a no-op; "take coin" in the kitchen: impossible
    done = label_play(model, "study", [TAKE_COIN, "look around"])
    assert done == (frozenset({TAKE_COIN}), None)


def test_a_game_that_disagrees_with_the_model_leaves_the_rest_unlabelled():
    model = CoinModel(SQUARE)
    rooms = iter([(True, "pantry"), (True, "hall"), (True, None)])
    labels = label_play(model, "kitchen", ["move east", "look around", "move west"], lambda action: next(rooms))
    assert labels == ({"open door to north", "move east"}, {"open door to north"}, None)  # the game shows the hall
    refused = label_play(model, "kitchen", ["move south", "move east"], lambda action: (action != "move south", "pantry"))
    assert refused == ({"open door to north", "move east"}, {"open door to north", "move east"})


def play(env, seed: int, actions: list[str]) -> list[list[str]]:
    """The valid actions before each of ``actions``, played from a fresh ``reset``."""
    _, info = env.reset(seed, "train")
    valid = []
    for action in actions:
        valid.append(info["valid_actions"])
        _, _, _, _, info = env.step(action)
    return valid


def hidden_rooms() -> EnvironmentSpec:
    """conf/hidden_rooms' game: coin in 6 rooms with doors, 3 distractor items."""
    environment = yaml.safe_load(CONF.read_text())["environment"]
    (game,) = environment["games"]
    return EnvironmentSpec(environment["env"], game["game"], game["params"], max_steps=environment["max_steps"])


def test_on_the_real_game_the_expert_is_optimal_the_labels_are_valid_and_a_detour_is_undone():
    env = make_env(hidden_rooms())
    detours = 0
    try:
        for seed in env.seeds("train", 10):
            env.reset(seed, "train")
            gold = env.gold_actions()
            labels = env.action_labels(gold)
            assert labels.source == "map" and None not in labels.optimal
            assert all(action in optimal for action, optimal in zip(gold, labels.optimal))
            valid = play(env, seed, gold)
            assert all(optimal <= set(listed) for optimal, listed in zip(labels.optimal, valid))
            detours += detour_is_undone(env, seed, labels.optimal[0])
    finally:
        env.close()
    assert detours >= 3


def detour_is_undone(env, seed: int, optimal: frozenset[str]) -> bool:
    """From the start, go one room off every shortest way into a dead end (through its door,
    opened first, if it has one): the labels then say going back, and only that, is optimal.
    Whether the start has such a detour."""
    _, info = env.reset(seed, "train")
    for direction in DIRECTIONS:
        ways = [f"open door to {direction}"] if f"open door to {direction}" in info["valid_actions"] else []
        ways.append(f"move {direction}")
        if ways[-1] not in info["valid_actions"] or optimal & set(ways):
            continue
        valid = play(env, seed, ways + ["look around"])[-1]
        if sum(action.startswith("move") for action in valid) != 1:
            continue
        env.reset(seed, "train")
        labels = env.action_labels(ways + [f"move {OPPOSITE[direction]}"])
        assert labels.optimal[-1] == {f"move {OPPOSITE[direction]}"}
        return True
    return False

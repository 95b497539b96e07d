"""Which actions are optimal in TextWorldExpress coin: a state model of the game over the
map ``coin_expert``'s walk finds, and the shortest distance to finishing in it.

SEED weighs each action by how much the hindsight skill raises its likelihood; to tell
whether that ranks good actions above bad ones, each step of a played episode needs the
set of actions that are optimal there. On coin the map tells it exactly:

- **State.** (the room, the doors open, whether the coin is taken). A door is the
  unordered pair of its two sides, ``{(room, direction), (neighbour, opposite)}``. Every
  door is closed at the start (checked on 300 tasks of conf/hidden_rooms); the doors are
  those the walk opened (``CoinMap.opened``), paired by the map's exits. A way out without
  a door (about a quarter of them) is always passable.
- **Actions.** As the real game plays them: ``open door to <d>`` opens the door (on an open
  door: "That is already open.", no change); ``close door to <d>`` closes it (on a closed
  one: no change); ``move <d>`` goes through the way out, and through a closed door does
  nothing ("You can't move there, the door is closed."); ``take coin`` in the coin's room
  finishes. A direction with no way out (or no door, for open and close), or ``take coin``
  elsewhere, is impossible: the game does not list it. Any other action (a distractor
  item, ``look around``, ``inventory``) leaves the state as it is. Actions are read ignoring
  case and runs of whitespace, as the adapter matches them.
- **Distance.** The fewest actions to finishing, by breadth-first search over the states
  reachable from the one asked about (backwards from the finished ones). An action is
  optimal when it lowers the distance by one; several can (two equally short ways).

``label_play`` labels a played episode step by step; given ``observe`` (the actions
replayed on the real game) it also checks the model against the game: each room an
observation names must be the model's room, and a move the model makes must name one.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Callable, NamedTuple, Sequence

from hindsight.envs.coin_expert import DIRECTIONS, OPPOSITE, TAKE_COIN, CoinMap, room_name
from hindsight.envs.valid_actions import normalize_action

if TYPE_CHECKING:
    from hindsight.envs.base import TextEnvironment

Side = tuple[str, str]
"""One side of a door: (the room, the direction it lies in from there)."""
Door = frozenset[Side]

DIRECTED: dict[str, tuple[str, str]] = {
    text: (verb, direction)
    for direction in DIRECTIONS
    for verb, text in (
        ("move", f"move {direction}"), ("open", f"open door to {direction}"), ("close", f"close door to {direction}")
    )
}
"""Each directional action's text -> (its verb: move, open or close; its direction)."""

Observe = Callable[[str], "tuple[bool, str | None] | None"]
"""Plays an action on the real game: (whether the game accepted it, the room its observation
names or None), or None once the game's episode is over."""


class CoinState(NamedTuple):
    """Where the player is, which doors are open, whether the coin is taken."""

    room: str
    open_doors: frozenset[Door] = frozenset()
    taken: bool = False


def map_doors(coin_map: CoinMap) -> dict[Side, Door]:
    """Each side of a door -> the door: the walk's opened sides, paired by the exits."""
    doors: dict[Side, Door] = {}
    for room, direction in coin_map.opened:
        neighbour = coin_map.exits.get(room, {}).get(direction)
        if neighbour is not None:
            door = frozenset({(room, direction), (neighbour, OPPOSITE[direction])})
            for side in door:
                doors[side] = door
    return doors


class CoinModel:
    """The state model of the module docstring over one map; distances are cached."""

    def __init__(self, coin_map: CoinMap) -> None:
        self.map = coin_map
        self.doors = map_doors(coin_map)
        self._distance: dict[CoinState, int | None] = {}

    def candidates(self, state: CoinState) -> list[str]:
        """The actions that can change ``state`` (the only ones that can be optimal)."""
        if state.taken:
            return []
        actions: list[str] = []
        for direction in DIRECTIONS:
            if direction in self.map.exits.get(state.room, {}):
                actions.append(f"move {direction}")
                if (state.room, direction) in self.doors:
                    actions += [f"open door to {direction}", f"close door to {direction}"]
        if state.room == self.map.coin_room:
            actions.append(TAKE_COIN)
        return actions

    def next_state(self, state: CoinState, action: str) -> CoinState | None:
        """The state after ``action``; None where the model says it is impossible (or the
        coin is already taken)."""
        if state.taken:
            return None
        text = normalize_action(action)
        if text == TAKE_COIN:
            return state._replace(taken=True) if state.room == self.map.coin_room else None
        if text not in DIRECTED:
            return state
        verb, direction = DIRECTED[text]
        neighbour = self.map.exits.get(state.room, {}).get(direction)
        door = self.doors.get((state.room, direction))
        if neighbour is None or (door is None and verb != "move"):
            return None
        if verb == "open":
            return state._replace(open_doors=state.open_doors | {door})
        if verb == "close":
            return state._replace(open_doors=state.open_doors - {door})
        return state if door is not None and door not in state.open_doors else state._replace(room=neighbour)

    def distance(self, state: CoinState) -> int | None:
        """The fewest actions from ``state`` to the coin taken; None where it cannot be."""
        if state not in self._distance:
            self._solve(state)
        return self._distance[state]

    def optimal_actions(self, state: CoinState) -> frozenset[str]:
        """Every action whose next state is one action nearer finishing; empty when finished
        or when finishing cannot be reached."""
        distance = self.distance(state)
        if not distance:
            return frozenset()
        optimal = set()
        for action in self.candidates(state):
            after = self.next_state(state, action)
            if after is not None and self.distance(after) == distance - 1:
                optimal.add(action)
        return frozenset(optimal)

    def _solve(self, origin: CoinState) -> None:
        """The distance of every state reachable from ``origin``: the states and their
        predecessors forwards, then breadth-first backwards from the finished ones."""
        predecessors: dict[CoinState, set[CoinState]] = {origin: set()}
        queue = deque([origin])
        while queue:
            state = queue.popleft()
            for action in self.candidates(state):
                after = self.next_state(state, action)
                if after is None or after == state:
                    continue
                if after not in predecessors:
                    predecessors[after] = set()
                    queue.append(after)
                predecessors[after].add(state)
        distance = {state: 0 for state in predecessors if state.taken}
        queue = deque(distance)
        while queue:
            state = queue.popleft()
            for before in predecessors[state]:
                if before not in distance:
                    distance[before] = distance[state] + 1
                    queue.append(before)
        for state in predecessors:
            self._distance[state] = distance.get(state)


def label_play(
    model: CoinModel, start: str, actions: Sequence[str], observe: Observe | None = None
) -> tuple[frozenset[str] | None, ...]:
    """The optimal set before each of ``actions``, played from room ``start``.

    A step is labelled while the model follows the play: the step of an action the model
    cannot follow keeps its label, every later step is None, as is every step after
    ``take coin``. With ``observe`` each action is also played on the real game and the
    model is checked against it (``follow``).
    """
    labels: list[frozenset[str] | None] = []
    state: CoinState | None = CoinState(start)
    for action in actions:
        if state is None or state.taken:
            labels.append(None)
            continue
        labels.append(model.optimal_actions(state))
        state = follow(model, state, action, observe)
    return tuple(labels)


def follow(model: CoinModel, state: CoinState, action: str, observe: Observe | None) -> CoinState | None:
    """The state after ``action``, or None where the model cannot follow it: an action it
    says is impossible that the game accepted (or that ``observe`` does not check), an
    action the game refused that the model says changes the state, a room the game names
    that is not the model's, a move of the model after which the game names no room, or a
    game already over."""
    after = model.next_state(state, action)
    if observe is None:
        return after
    seen = observe(action)
    if seen is None:
        return None
    accepted, room = seen
    if not accepted:
        return state if after is None or after == state else None
    if after is None or (room is None and after.room != state.room) or (room is not None and room != after.room):
        return None
    return after


def observe_game(env: "TextEnvironment") -> Observe:
    """An ``Observe`` that plays each action on ``env`` (reset to the task and at the play's
    start): whether it was accepted and the room its observation names, None once the
    episode has ended."""
    over = [False]

    def observe(action: str) -> tuple[bool, str | None] | None:
        if over[0]:
            return None
        observation, _, terminated, truncated, info = env.step(action)
        over[0] = terminated or truncated
        return bool(info["action_valid"]), room_name(observation)

    return observe

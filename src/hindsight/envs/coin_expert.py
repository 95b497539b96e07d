"""A deterministic expert for TextWorldExpress coin: the shortest way to the coin, found
with the map.

TextWorldExpress's own gold sequence for coin with doors explores the rooms in an order
drawn afresh on every call: the same task gives another sequence in another process (and
often one that runs past the step limit), so the expert episodes, and all that is trained
on them, differ from run to run. This expert is a function of the game alone:

1. **Map.** A depth-first walk from the start, directions in a fixed order (north, south,
   east, west): in each room it opens every closed door, then moves through each way out
   to a room not yet seen, and back. It records each room's ways out and the coin's room
   (the room where ``take coin`` is a valid action).
2. **Path.** On the freshly generated task, breadth-first search over that map (ties in
   the same fixed order), then ``open door to <d>`` before each move through a door the
   walk had to open, and ``take coin``.

The walk plays on the simulator object and the task is generated again before the path is
returned, so the episode starts where ``reset`` left it. Rooms are told apart by their name
(``You are in the <name>.``), as the game shows them.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Callable, Sequence

DIRECTIONS = ("north", "south", "east", "west")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
TAKE_COIN = "take coin"
ROOM = re.compile(r"You are in the ([^.]+)\.")

Step = Callable[[str], tuple[str, Sequence[str]]]
"""Plays an action on the simulator: (its observation, the valid actions after it)."""


def room_name(observation: str) -> str | None:
    """The room an observation describes (``You are in the kitchen.`` -> ``kitchen``)."""
    found = ROOM.search(observation)
    return found.group(1).strip() if found else None


class CoinMap:
    """What the walk learnt: each room's ways out, the doors it opened, the coin's room."""

    def __init__(self) -> None:
        self.exits: dict[str, dict[str, str]] = {}
        self.opened: set[tuple[str, str]] = set()
        self.coin_room: str | None = None

    def path(self, start: str) -> list[str]:
        """The shortest action sequence from ``start`` to the coin, ``take coin`` last;
        empty when the walk never saw the coin."""
        if self.coin_room is None:
            return []
        previous: dict[str, tuple[str, str] | None] = {start: None}
        queue = deque([start])
        while queue:
            room = queue.popleft()
            for direction in DIRECTIONS:
                neighbour = self.exits.get(room, {}).get(direction)
                if neighbour is not None and neighbour not in previous:
                    previous[neighbour] = (room, direction)
                    queue.append(neighbour)
        if self.coin_room not in previous:
            return []
        moves: list[tuple[str, str]] = []
        room = self.coin_room
        while previous[room] is not None:
            room, direction = previous[room]  # type: ignore[misc]
            moves.append((room, direction))
        actions: list[str] = []
        for room, direction in reversed(moves):
            if (room, direction) in self.opened:
                actions.append(f"open door to {direction}")
            actions.append(f"move {direction}")
        return actions + [TAKE_COIN]


def walk_map(start_observation: str, start_actions: Sequence[str], step: Step, max_actions: int = 400) -> tuple[str, CoinMap]:
    """The depth-first walk of the module docstring from the start state.

    Returns:
        (the start room's name, the map).

    Raises:
        ValueError: The start observation names no room, or the walk needed more than
            ``max_actions`` actions (a game this walk does not understand).
    """
    start = room_name(start_observation)
    if start is None:
        raise ValueError(f"coin expert: no room in the start observation {start_observation[:120]!r}")
    found = CoinMap()
    budget = [max_actions]

    def act(action: str) -> tuple[str, Sequence[str]]:
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError(f"coin expert: the map walk took more than {max_actions} actions")
        return step(action)

    def visit(room: str, actions: Sequence[str]) -> None:
        exits = found.exits.setdefault(room, {})
        if TAKE_COIN in actions and found.coin_room is None:
            found.coin_room = room
        for direction in DIRECTIONS:
            if f"open door to {direction}" in actions:
                _, actions = act(f"open door to {direction}")
                found.opened.add((room, direction))
        for direction in DIRECTIONS:
            if f"move {direction}" not in actions:
                continue
            observation, there = act(f"move {direction}")
            neighbour = room_name(observation)
            if neighbour is None:
                observation, there = act("look around")
                neighbour = room_name(observation)
            if neighbour is None:
                raise ValueError(f"coin expert: no room after 'move {direction}' from the {room}: {observation[:120]!r}")
            if neighbour == room:
                continue
            exits[direction] = neighbour
            if (room, direction) in found.opened:  # a door is closed from both sides at the start
                found.opened.add((neighbour, OPPOSITE[direction]))
            if neighbour not in found.exits:
                visit(neighbour, there)
            found.exits.setdefault(neighbour, {}).setdefault(OPPOSITE[direction], room)
            _, actions = act(f"move {OPPOSITE[direction]}")

    visit(start, start_actions)
    return start, found

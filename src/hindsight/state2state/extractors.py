"""Read the current state of an environment as a set of facts (``facts`` vocabulary).

Each simulator is read through its own state API, never by playing an action, so reading
the facts does not change the episode (the step count, the reward, the observation history
and the simulator's own move counter are untouched; ``tests/state2state`` checks that the
facts read twice, and the next observation, are the same with and without a read):

    TextWorldExpress  the game's object tree: each room's and the inventory's ``toJSON()``
                      and the agent's location, read on the running Java game object (one
                      guarded call on the shared JVM, ~5 ms). Doors are left out.
    ScienceWorld      ``getObjectTree`` (the whole universe as JSON, ~50 ms); the
                      "terminal" sub-objects of electrical parts, the agent and its
                      inventory object are left out as objects.
    TextWorld         the logical facts TextWorld's own state tracking keeps for the
                      admissible commands (``_facts`` of the engine's state), named with the
                      game's entity names; static facts (room links) are left out.

``extract_facts(env)`` dispatches on the adapter class; a wrapper (``exploration``,
``goal_env``) exposes its base environment as ``env.base``.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from hindsight.envs.base import EnvironmentConfigError, TextEnvironment
from hindsight.state2state.facts import make_fact

TEXTWORLDEXPRESS_PROPERTIES = {
    "isChopped": "chopped",
    "isSliced": "sliced",
    "isDiced": "diced",
    "isFried": "fried",
    "isRoasted": "roasted",
    "isGrilled": "grilled",
    "isEaten": "eaten",
}
"""TextWorldExpress object flags that become a unary fact when true."""

TEXTWORLDEXPRESS_WORLD_GAMES = ("twc", "cookingworld", "coin", "mapreader")
"""The TextWorldExpress games with rooms, objects and an inventory (the others are puzzles
without a world: arithmetic, sorting, simonsays, peckingorder)."""

TEXTWORLD_KEPT = ("at", "in", "on", "open", "closed", "locked", "eaten")
"""TextWorld predicates kept (the others, like room links, never change)."""

SCIENCEWORLD_SKIPPED_NAMES = ("agent", "inventory")


def extract_facts(env: TextEnvironment) -> frozenset[str]:
    """The facts of ``env``'s current state (after ``reset``).

    Raises:
        EnvironmentConfigError: An environment family without a fact reader.
    """
    while hasattr(env, "base"):
        env = env.base
    family = env.spec.env
    readers = {
        "textworldexpress": textworldexpress_facts,
        "scienceworld": scienceworld_facts,
        "textworld": textworld_facts,
    }
    if family not in readers:
        raise EnvironmentConfigError(
            f"State2State reads facts of {sorted(readers)} only; environment {family!r} has no fact reader."
        )
    return readers[family](env)


def textworldexpress_facts(env) -> frozenset[str]:
    """Facts of a TextWorldExpress game (see the module docstring)."""

    if env.game not in TEXTWORLDEXPRESS_WORLD_GAMES:
        raise EnvironmentConfigError(
            f"TextWorldExpress game {env.game!r} has no rooms or objects to read facts from; "
            f"State2State reads {', '.join(TEXTWORLDEXPRESS_WORLD_GAMES)}."
        )

    def read(interface) -> tuple[str, str, list[str]]:
        game = interface.game()
        if game is None:
            raise RuntimeError("TextWorldExpress has no game: call reset(seed, split) first.")
        rooms = [room.toJSON() for room in game.locations()]
        return str(game.agentLocation().name()), str(game.agentInventory().toJSON()), rooms

    location, inventory, rooms = env.guarded(read)
    facts = {make_fact("at", "agent", location)}
    for child in _twx_contents(json.loads(inventory)):
        facts.add(make_fact("carries", child["name"]))
        facts |= _twx_object_facts(child, holder=None)
    for room_json in rooms:
        room = json.loads(room_json)
        for child in _twx_contents(room):
            facts |= _twx_object_facts(child, holder=room["name"])
    return frozenset(facts)


def _twx_contents(node: dict) -> list[dict]:
    return [child for child in (node.get("contents") or {}).values() if not child.get("isDeleted")]


def _twx_object_facts(node: dict, holder: str | None) -> set[str]:
    """Facts of one TextWorldExpress object and, recursively, of what it holds."""
    name = node["name"]
    facts = set()
    if holder is not None and node.get("isMovable"):
        facts.add(make_fact("in", name, holder))
    if node.get("isOpenable"):
        facts.add(make_fact("open" if node.get("isOpen") else "closed", name))
    facts |= {make_fact(label, name) for flag, label in TEXTWORLDEXPRESS_PROPERTIES.items() if node.get(flag)}
    for child in _twx_contents(node):
        facts |= _twx_object_facts(child, holder=name)
    return facts


def scienceworld_facts(env) -> frozenset[str]:
    """Facts of a ScienceWorld task (see the module docstring)."""
    tree = json.loads(env.guarded(lambda interface: str(interface.getObjectTree(""))))
    facts: set[str] = set()
    for node, parent, room in _sw_walk(tree, None, None):
        name = node["name"]
        if name == "agent":
            facts.add(make_fact("at", "agent", room))
            continue
        if parent is None or name in SCIENCEWORLD_SKIPPED_NAMES or name.startswith("terminal "):
            continue
        if parent["name"] == "inventory":
            facts.add(make_fact("carries", name))
        elif parent["name"] not in ("agent", "universe"):
            facts.add(make_fact("in", name, parent["name"]))
        if parent["name"] == "universe":
            continue  # a room (or the universe's own parts): no state of its own to reach
        container = node.get("propContainer") or {}
        if container.get("isClosable"):
            facts.add(make_fact("open" if container.get("isOpen") else "closed", name))
        portal = node.get("propPortal") or {}
        if "isOpen" in portal:
            facts.add(make_fact("open" if portal["isOpen"] else "closed", name))
        device = node.get("propDevice") or {}
        if device.get("isActivable"):
            facts.add(make_fact("on" if device.get("isActivated") else "off", name))
        material = node.get("propMaterial") or {}
        if material.get("stateOfMatter"):
            facts.add(make_fact(str(material["stateOfMatter"]), name))
    return frozenset(facts)


def _sw_walk(node: dict, parent: dict | None, room: str | None) -> Iterator[tuple[dict, dict | None, str | None]]:
    """Every ScienceWorld object with its parent and the room it is in (depth-first)."""
    yield node, parent, room
    for child in (node.get("contents") or {}).values():
        if child.get("isDeleted"):
            continue
        child_room = child["name"] if node["name"] == "universe" else room
        yield from _sw_walk(child, node, child_room)


def textworld_facts(env) -> frozenset[str]:
    """Facts of a TextWorld game (see the module docstring)."""
    state: Any = env.state
    if state is None or "_facts" not in state:
        raise RuntimeError("TextWorld has no game state: call reset(seed, split) first.")
    infos = state["_game_progression"].game.infos

    def name(variable) -> str | None:
        if variable.name == "P":
            return "agent"
        info = infos.get(variable.name)
        return info.name if info is not None and info.name else None

    facts = set()
    for proposition in state["_facts"]:
        predicate = str(proposition.name)
        if predicate not in TEXTWORLD_KEPT:
            continue
        arguments = proposition.arguments
        if predicate == "in" and len(arguments) == 2 and arguments[1].name == "I":
            named = name(arguments[0])
            if named:
                facts.add(make_fact("carries", named))
            continue
        names = [name(argument) for argument in arguments]
        if any(named is None for named in names):
            continue
        if predicate == "at" and names[0] != "agent":
            predicate = "in"
        facts.add(make_fact(predicate, *names))
    return frozenset(facts)

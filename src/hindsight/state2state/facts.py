"""Facts: one reached state as a set of short strings, matched by set inclusion.

A fact is ``predicate(argument, ...)``, e.g. ``in(clean brown shirt, wardrobe)``. The
vocabulary is shared by every environment (``extractors`` maps each simulator onto it):

    at(agent, <room>)        the agent is in <room>
    carries(<object>)        <object> is in the agent's inventory
    in(<object>, <holder>)   <object> is in or on <holder> (a container, surface or room)
    on(<object>, <surface>)  <object> is on <surface> (TextWorld's own distinction)
    open(<x>) / closed(<x>)  an openable container or door
    locked(<x>)              a locked container or door (TextWorld)
    on(<x>) / off(<x>)       an activable device (ScienceWorld)
    <property>(<object>)     an object's state: sliced, fried, eaten, liquid, gas, ...

Success of a goal is rule-based: every goal fact is in the current state's facts
(``goal_reached``). Names are the simulator's display names; two objects of one name
collapse into one fact, which can only make a goal easier to match, never wrong about
what the agent sees.
"""

from __future__ import annotations

import re
from typing import Iterable

_FACT = re.compile(r"^([a-z_]+)\((.*)\)$")


def make_fact(predicate: str, *arguments: str) -> str:
    """``predicate(a, b)`` from its parts (names trimmed and lower-cased)."""
    names = [" ".join(str(argument).split()).lower() for argument in arguments]
    return f"{predicate}({', '.join(names)})"


def parse_fact(fact: str) -> tuple[str, tuple[str, ...]]:
    """``(predicate, arguments)`` of a fact string.

    Raises:
        ValueError: Not of the form ``predicate(arguments)``.
    """
    match = _FACT.match(str(fact).strip())
    if match is None:
        raise ValueError(f"Not a fact (expected 'predicate(argument, ...)'): {fact!r}")
    arguments = tuple(part.strip() for part in match.group(2).split(",")) if match.group(2).strip() else ()
    return match.group(1), arguments


def describe_fact(fact: str) -> str:
    """The fact in plain English ("the clean brown shirt is in the wardrobe")."""
    predicate, arguments = parse_fact(fact)
    if predicate == "at" and len(arguments) == 2 and arguments[0] == "agent":
        return f"you are in the {arguments[1]}"
    if predicate == "carries" and len(arguments) == 1:
        return f"you carry the {arguments[0]}"
    if predicate == "in" and len(arguments) == 2:
        return f"the {arguments[0]} is in the {arguments[1]}"
    if predicate == "on" and len(arguments) == 2:
        return f"the {arguments[0]} is on the {arguments[1]}"
    if len(arguments) == 1:
        return f"the {arguments[0]} is {predicate.replace('_', ' ')}"
    return fact


def goal_text(goal: Iterable[str]) -> str:
    """The task text of a goal: "Your task is to reach a state where <facts>."."""
    clauses = [describe_fact(fact) for fact in sorted(goal)]
    return "Your task is to reach a state where " + " and ".join(clauses) + "."


def goal_reached(goal: Iterable[str], state: Iterable[str]) -> bool:
    """Whether every fact of ``goal`` holds in ``state`` (rule-based success)."""
    return set(goal) <= set(state)

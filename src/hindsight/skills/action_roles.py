"""Abstract text actions to their structure, with objects replaced by their roles.

An action is read generically as ``verb [particle] primary-object [preposition object]...``:
the first word is the verb (joined with a particle such as "around", "up" or "at" for
"look around", "pick up X", "look at X"), and the rest is split at prepositions ("in", "on",
"from", "with", "to", ...) into object phrases. Each phrase becomes a role from the verb and
its preposition, so instance names vanish and the action structure stays:

    put dirty teal dress in laundry basket   -> put <object> in <container>
    take knife from cutlery drawer           -> take <object> from <container>
    open fridge                              -> open <container>
    cook yellow bell pepper in oven          -> cook <ingredient> in <appliance>
    slice carrot with knife                  -> slice <ingredient> with <tool>
    go north / move west                     -> go <direction> / move <direction>
    move to kitchen                          -> move to <location>
    open door to west                        -> open <door> to <direction>

A phrase made only of ``literal_words`` (e.g. the words of the task text: "read cookbook",
"eat meal") are kept as they are: they belong to the task, not to the instance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection

DIRECTIONS = frozenset({"north", "south", "east", "west", "up", "down", "northeast", "northwest",
                        "southeast", "southwest", "left", "right", "forward", "back", "backward"})
PARTICLES = frozenset({"around", "up", "down", "on", "off", "out", "at", "over"})
PREPOSITIONS = frozenset({"in", "into", "inside", "on", "onto", "from", "with", "using", "to", "at", "under"})
CONTAINER_VERBS = frozenset({"open", "close", "unlock", "lock"})
MOVE_VERBS = frozenset({"go", "move", "walk", "run", "enter", "travel", "teleport", "head"})
PREPARE_VERBS = frozenset({"cook", "slice", "chop", "dice", "fry", "roast", "grill", "bake", "boil",
                           "heat", "cut", "mix", "peel", "melt", "freeze"})
INFORMATION_VERBS = frozenset({"look", "look around", "look at", "examine", "inventory", "check", "l", "x", "i"})
"""Verbs that only show information (never state-changing progress by themselves)."""


@dataclass(frozen=True)
class ActionStructure:
    """A parsed action: the verb and its (preposition, object phrase) parts; the first
    part's preposition is None (the direct object)."""

    verb: str
    parts: tuple[tuple[str | None, str], ...]

    @property
    def object_phrases(self) -> list[str]:
        """The object phrases, direct object first."""
        return [phrase for _, phrase in self.parts]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9'\-]+", text.lower())


def parse_action_structure(action: str) -> ActionStructure:
    """Split an action into its verb and (preposition, object phrase) parts.

    Args:
        action: A text action, e.g. "put apple in fridge".

    Returns:
        The structure; an empty action gives verb "" and no parts.
    """
    tokens = action.lower().split()
    if not tokens:
        return ActionStructure("", ())
    verb, rest = tokens[0], tokens[1:]
    if rest and rest[0] in PARTICLES and verb not in MOVE_VERBS:  # "look around", "pick up X"
        verb, rest = f"{verb} {rest[0]}", rest[1:]
    parts: list[tuple[str | None, str]] = []
    preposition: str | None = None
    current: list[str] = []
    for token in rest:
        if token in PREPOSITIONS and (current or preposition is None):
            if current:
                parts.append((preposition, " ".join(current)))
            preposition, current = token, []
        else:
            current.append(token)
    if current:
        parts.append((preposition, " ".join(current)))
    return ActionStructure(verb, tuple(parts))


def phrase_role(verb: str, preposition: str | None, phrase: str) -> str:
    """The role of an object phrase given the verb and the preposition in front of it."""
    head_verb = verb.split()[0] if verb else ""
    words = phrase.split()
    if words and all(word in DIRECTIONS for word in words):
        return "<direction>"
    if "door" in words:
        return "<door>"
    if preposition is None:
        if head_verb in CONTAINER_VERBS:
            return "<container>"
        if head_verb in MOVE_VERBS:
            return "<location>"
        if head_verb in PREPARE_VERBS:
            return "<ingredient>"
        return "<object>"
    if head_verb in PREPARE_VERBS:
        return "<tool>" if preposition in ("with", "using") else "<appliance>"
    if preposition in ("in", "into", "inside", "from"):
        return "<container>"
    if preposition in ("on", "onto"):
        return "<surface>"
    if preposition in ("with", "using"):
        return "<tool>"
    if preposition == "to":
        return "<location>"
    return "<object>"


def task_words(task: str) -> frozenset[str]:
    """The words of a task text; an object phrase made only of them is kept literal."""
    return frozenset(_words(task))


def abstract_action(action: str, literal_words: Collection[str] = ()) -> str:
    """The action with its object phrases replaced by roles (see the module docstring).

    Args:
        action: A text action.
        literal_words: Words that belong to the task; a phrase made only of them stays literal.

    Returns:
        The abstract action, lower-cased, e.g. "put <object> in <container>".
    """
    structure = parse_action_structure(action)
    pieces = [structure.verb] if structure.verb else []
    for preposition, phrase in structure.parts:
        words = phrase.split()
        literal = bool(words) and all(word in literal_words for word in _words(phrase))
        role = phrase if literal else phrase_role(structure.verb, preposition, phrase)
        pieces.extend([preposition, role] if preposition else [role])
    return " ".join(pieces)


def is_information_action(action: str) -> bool:
    """True for actions that only show information ("look around", "inventory", ...)."""
    return parse_action_structure(action).verb in INFORMATION_VERBS

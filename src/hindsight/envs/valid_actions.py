"""Matching an agent's action text against the environment's valid actions.

TextWorldExpress and TextWorld list every action they accept in the current state. The
adapters of those two check the agent's action against that list *before* sending it:
an action not in the list is never sent, so the simulator state stays exactly as it was
(``action_valid=False``, a no-op step). Matching ignores case and runs of whitespace (the
canonical spelling from the list is what gets sent), nothing more: "take shirt" does not
match "take clean brown shirt".
"""

from __future__ import annotations

from typing import Sequence


def normalize_action(action: str) -> str:
    """Lower-case ``action`` and collapse whitespace (the form used for matching)."""
    return " ".join(str(action).split()).lower()


def match_valid_action(action: str, valid_actions: Sequence[str]) -> str | None:
    """The entry of ``valid_actions`` that ``action`` spells, or None if there is none.

    Args:
        action: The agent's action text.
        valid_actions: The environment's valid actions in the current state.

    Returns:
        The canonical valid action (as listed), or None when ``action`` is not valid.
    """
    wanted = normalize_action(action)
    if not wanted:
        return None
    for candidate in valid_actions:
        if normalize_action(candidate) == wanted:
            return candidate
    return None

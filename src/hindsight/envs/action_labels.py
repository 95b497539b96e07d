"""Which actions of a played episode were optimal, on any environment.

SEED's gate is monotone in how much the hindsight skill raises an action's likelihood; to
tell whether that ranks good actions above bad ones, each step of a played episode needs
the set of actions optimal there. Each environment says it through
``TextEnvironment.action_labels`` (asked right after ``reset``), with one of two sources:

    map        exact: every valid action on some shortest way to finishing, from the
               game's map (TextWorldExpress coin, ``coin_optimal``)
    gold_next  a proxy: the gold sequence's next action, labelled only on the steps whose
               history so far is the gold sequence's prefix (the default, from
               ``gold_actions()``)

``label_episode`` resets the environment to the task and asks it. This module imports
nothing of ``base`` (``base`` imports it): ``LabelledEnvironment`` says what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from hindsight.envs.valid_actions import normalize_action

LABEL_SOURCES = ("map", "gold_next")


@dataclass(frozen=True)
class ActionLabels:
    """The optimal actions at each step of one played episode.

    ``source`` is one of ``LABEL_SOURCES``. ``optimal`` holds, per played action in order,
    the set of actions optimal before it (in the environment's own spelling; played actions
    are compared ignoring case and runs of whitespace), or None where the step is
    unlabelled.
    """

    source: str
    optimal: tuple[frozenset[str] | None, ...]

    def __post_init__(self) -> None:
        if self.source not in LABEL_SOURCES:
            raise ValueError(f"Unknown action-label source {self.source!r}; expected one of {LABEL_SOURCES}.")

    def is_optimal(self, step: int, action: str) -> bool | None:
        """Whether ``action`` is optimal at ``step``; None where the step is unlabelled."""
        optimal = self.optimal[step]
        if optimal is None:
            return None
        return normalize_action(action) in {normalize_action(candidate) for candidate in optimal}


def gold_next_labels(gold: Sequence[str], actions: Sequence[str]) -> ActionLabels:
    """The gold-next proxy: step ``i`` is labelled ``{gold[i]}`` while ``actions[:i]`` equals
    ``gold[:i]`` (and the gold sequence goes on), None from the first deviation on."""
    labels: list[frozenset[str] | None] = []
    on_gold = True
    for step, action in enumerate(actions):
        on_gold = on_gold and step < len(gold)
        labels.append(frozenset({gold[step]}) if on_gold else None)
        on_gold = on_gold and normalize_action(action) == normalize_action(gold[step])
    return ActionLabels("gold_next", tuple(labels))


class LabelledEnvironment(Protocol):
    """What ``label_episode`` needs of an environment (``base.TextEnvironment`` has both)."""

    def reset(self, seed: int, split: str = "train") -> Any: ...

    def action_labels(self, actions: Sequence[str]) -> "ActionLabels | None": ...


def label_episode(env: LabelledEnvironment, seed: int, split: str, actions: Sequence[str]) -> ActionLabels | None:
    """The labels of ``actions`` played from task ``seed`` of fold ``split``: the environment
    is reset to the task and asked (``env.action_labels``); None where it has none. The
    environment may be left anywhere in the episode (coin replays the actions on it)."""
    env.reset(seed, split)
    return env.action_labels(actions)

"""One Gymnasium-style interface for every text environment the project trains on.

An environment holds one task at a time. ``reset(seed, split)`` loads the task instance
``seed`` of the fold ``split`` ("train", "dev" or "test") and returns the first observation
and an info dict; ``step(action)`` plays one text action. Every adapter fills the same info
keys, so the rollout engine, the expert collector and the tests never look at which
environment they drive:

    task               the task text shown to the agent ("Your task is to ...")
    task_type          the game / task family (e.g. "twc", "cookingworld", "boil")
    valid_actions      list[str], the actions the environment accepts now
    anchor_observation the raw environment observation of this state, without history
                       (GiGPO groups step samples by it)
    won                True once the task is solved
    action_valid       whether the last action was accepted (True after reset)
    score              the environment's own progress score, in [0, 1] where it has one
    inventory          what the agent carries, as text ("" where the env has no inventory)

An invalid action is a normal step: ``action_valid=False``, the reward minus the invalid-action
penalty (``hindsight.envs.reward``), the state unchanged.
It never raises. Errors the user can fix (unknown game, bad parameters, no Java) raise
``EnvironmentConfigError``; a dead backend (crashed JVM) raises ``EnvironmentCrashedError``
and ``restart()`` brings the environment back without restarting Python. A simulator call
that runs past ``EnvironmentSpec.step_timeout_s`` (a hang) raises ``EnvironmentTimeoutError``,
a kind of ``EnvironmentCrashedError``: the backend was killed, ``restart()`` as after a crash
(JVM simulators; ``java_backend``). The rollout engine restarts the environment and
replays the episode that met either from its start (``hindsight.rollout.replay``).

Which actions were optimal at each step of a played episode, for analysis of a method's
action weights, is ``action_labels(actions)`` right after ``reset``: the gold sequence's
next action along its prefix by default, exact labels where an environment knows its map
(``hindsight.envs.action_labels``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from hindsight.envs.action_labels import ActionLabels, gold_next_labels
from hindsight.envs.reward import RewardConfig

SPLITS = ("train", "dev", "test")

StepResult = tuple[str, float, bool, bool, dict[str, Any]]


class EnvironmentConfigError(ValueError):
    """A problem the user can fix: unknown game, bad parameter, missing Java runtime."""


class EnvironmentCrashedError(RuntimeError):
    """The environment backend died (e.g. the JVM); call ``restart()``."""


class EnvironmentTimeoutError(EnvironmentCrashedError):
    """A simulator call ran past the step timeout; its backend was killed, call ``restart()``."""


def check_split(split: str) -> None:
    """Raise ``EnvironmentConfigError`` unless ``split`` is one of ``SPLITS``."""
    if split not in SPLITS:
        raise EnvironmentConfigError(f"Unknown split {split!r}; expected one of {SPLITS}.")


@dataclass(frozen=True)
class EnvironmentSpec:
    """What to build: the environment family, the game inside it, and its parameters.

    ``env`` is one of "textworldexpress", "scienceworld", "textworld" (or "alfworld").
    ``game`` is the game / task name inside it. ``params`` are game parameters
    (e.g. ``{"numLocations": 1, "numItemsToPutAway": 2}`` for TextWorldExpress twc).
    """

    env: str
    game: str
    params: dict[str, Any] = field(default_factory=dict)
    max_steps: int = 30
    reward: RewardConfig = field(default_factory=RewardConfig)
    """How a step is rewarded (the environment computes every reward the project records)."""
    step_timeout_s: float | None = 60.0
    """Longest one simulator call (of a ``reset`` or ``step``) may take: past it the backend
    is killed and the call raises ``EnvironmentTimeoutError`` (JVM simulators:
    TextWorldExpress, ScienceWorld). None: no limit."""


class TextEnvironment(ABC):
    """A text environment holding one task at a time (see the module docstring)."""

    spec: EnvironmentSpec
    private_info_keys: ClassVar[tuple[str, ...]] = ()
    """Info keys the project's own loop may read but an outside agent does not get: the
    Gymnasium wrapper (``gym_wrapper``) drops them."""
    gold_analysis: ClassVar[str | None] = None
    """Where the gold sequence lives when it is an analysis interface an outside agent does
    not get (the Gymnasium wrapper's ``gold_actions()`` refuses, naming it); None: the
    wrapper hands ``gold_actions()`` out."""

    @abstractmethod
    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Load task instance ``seed`` of fold ``split``; return (observation, info)."""

    @abstractmethod
    def step(self, action: str) -> StepResult:
        """Play ``action``; return (observation, reward, terminated, truncated, info)."""

    @abstractmethod
    def gold_actions(self) -> list[str]:
        """The expert action sequence that solves the current task (after ``reset``)."""

    @abstractmethod
    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` task seeds of fold ``split`` starting at position ``offset``."""

    def action_labels(self, actions: Sequence[str]) -> ActionLabels | None:
        """The optimal actions before each of ``actions`` played from the task just reset
        (call it right after ``reset``). By default the gold-next proxy
        (``action_labels.gold_next_labels``); None where the environment has no gold
        sequence (``gold_actions`` raises or returns none). An environment that knows its
        map overrides it with exact labels."""
        try:
            gold = self.gold_actions()
        except EnvironmentCrashedError:
            raise
        except (NotImplementedError, RuntimeError, ValueError):
            return None
        return gold_next_labels(gold, actions) if gold else None

    def screenshot(self) -> "Any | None":
        """The current page as an RGB ``uint8`` array of shape (height, width, 3), for
        environments that render a screen (the GUI family, ``hindsight.envs.miniwob``); None
        for text environments. Policies that see read it beside the text observation."""
        return None

    def fold_size(self, split: str) -> int | None:
        """How many tasks fold ``split`` holds; None when it is unbounded or unknown."""
        return None

    @abstractmethod
    def restart(self) -> None:
        """Bring a crashed backend back (new process / JVM); the next call is ``reset``."""

    @abstractmethod
    def close(self) -> None:
        """Release the backend."""

    def __enter__(self) -> "TextEnvironment":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ToyEnvironment(TextEnvironment):
    """A base for small hand-written games (``examples/seed_update.py``, the tests' worlds):
    task seeds ``offset .. offset + count - 1`` in every fold, ``gold_actions`` returns
    ``GOLD`` (override it where the gold depends on the task), and restart and close do
    nothing. A subclass writes ``reset`` and ``step``."""

    GOLD: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: EnvironmentSpec | None = None) -> None:
        if spec is not None:
            self.spec = spec

    def gold_actions(self) -> list[str]:
        return list(self.GOLD)

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        return list(range(offset, offset + count))

    def restart(self) -> None:
        pass

    def close(self) -> None:
        pass

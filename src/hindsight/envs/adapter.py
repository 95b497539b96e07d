"""What the adapters share, so that each adapter module holds only its own simulator.

Every adapter keeps its spec and an ``EpisodeTracker`` (step count, reward, termination),
caches the gold sequence of the current episode, and answers ``seeds`` with a window of
its fold's seeds. Beyond that, there are two ways a simulator is driven, one base each:

    JavaObjectAdapter        one Java ``PythonInterface`` object on a (shared) JVM:
                             TextWorldExpress, ScienceWorld. Calls go through the
                             ``JavaBackend`` guard, each bounded by ``spec.step_timeout_s``
                             (a hung call gets the JVM killed: ``EnvironmentTimeoutError``);
                             ``restart`` creates a new object (on a new JVM if the old one
                             died); ``close`` drops the object.
    InProcessEngineAdapter   a TextWorld engine run in this Python process: TextWorld,
                             ALFWorld. Engine errors become ``EnvironmentCrashedError``;
                             ``restart`` and ``close`` drop the engine.

Simulators that list every action they accept (TextWorldExpress, TextWorld, ALFWorld) step
through ``ListedActionStep``: an action not in the list is never sent (see
``hindsight.envs.valid_actions``). ScienceWorld lets its own parser judge and steps itself.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, ClassVar, Sequence

from hindsight.envs.valid_actions import match_valid_action
from hindsight.envs.base import (
    EnvironmentConfigError,
    EnvironmentCrashedError,
    EnvironmentSpec,
    StepResult,
    TextEnvironment,
)
from hindsight.envs.tracker import EpisodeTracker
from hindsight.envs.java_backend import JavaBackend
from hindsight.envs.reward import RewardConfig

logger = logging.getLogger(__name__)


def seed_window(available: Sequence[int], count: int, offset: int, owner: str, unit: str) -> list[int]:
    """``count`` entries of ``available`` from position ``offset`` (what ``seeds`` returns).

    Args:
        available: Every seed of the fold, in order.
        count: How many to hand out.
        offset: Position of the first one.
        owner: Who holds the seeds, for the message (e.g. "TextWorldExpress 'twc'").
        unit: What they are, for the message (e.g. "dev seeds").

    Raises:
        EnvironmentConfigError: The window does not fit inside ``available``.
    """
    if offset < 0 or count < 0 or offset + count > len(available):
        raise EnvironmentConfigError(
            f"{owner} has {len(available)} {unit}; asked for {count} from offset {offset}."
        )
    return list(available[offset : offset + count])


class EnvironmentAdapter(TextEnvironment):
    """Spec, episode bookkeeping and the cached gold sequence of one adapter.

    Args:
        spec: What to build.
        reward: Step reward settings (default ``RewardConfig()``).
    """

    display_name: ClassVar[str]
    """The simulator's name in messages ("TextWorldExpress")."""

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None = None) -> None:
        self.spec = spec
        self._episode = EpisodeTracker(spec.max_steps, reward or RewardConfig())
        self._gold: list[str] | None = None

    def _start_episode(self, observation: str, gold: list[str] | None = None) -> tuple[str, dict[str, Any]]:
        """Begin the episode whose first observation is ``observation``; return what ``reset``
        returns. ``gold`` is the gold sequence where the simulator hands it out with the game
        (otherwise ``_expert_actions`` is asked on first use)."""
        self._anchor = observation
        self._gold = gold
        self._episode.start()
        return observation, self._info(action_valid=True)

    def _info(self, action_valid: bool) -> dict[str, Any]:
        """The info dict of the current state (``episode.make_info``)."""
        raise NotImplementedError

    def gold_actions(self) -> list[str]:
        """The expert action sequence for the current episode (asked for once per episode)."""
        if not self._episode.active:
            raise RuntimeError("gold_actions() needs a game: call reset(seed, split) first.")
        if self._gold is None:
            self._gold = self._expert_actions()
        return list(self._gold)

    def _expert_actions(self) -> list[str]:
        """Ask the simulator for the gold sequence (adapters that get it with the game pass it
        to ``_start_episode`` instead)."""
        raise NotImplementedError


class ListedActionStep:
    """The step of a simulator that lists its valid actions: an action not in the list is a
    no-op step (``action_valid=False``, state and anchor unchanged, observation
    ``invalid_action_observation``); a listed one is sent in its canonical spelling.

    Mixed in before an ``EnvironmentAdapter`` base, which provides ``_info(action_valid)``
    and these hooks:

        _listed_actions()   the actions the simulator accepts in the current state
        _send(action)       play a listed action; return the observation the agent reads
        _outcome()          (won, lost) in the current state
    """

    invalid_action_observation: ClassVar[str]
    """What the agent reads after an action that is not in the list."""

    def step(self, action: str) -> StepResult:
        """Play ``action`` if it is in the valid-action list; otherwise a no-op step."""
        self._episode.check_can_step()
        canonical = match_valid_action(action, self._listed_actions())
        if canonical is None:
            reward, terminated, truncated = self._episode.record(False, False, action_valid=False)
            return self.invalid_action_observation, reward, terminated, truncated, self._info(action_valid=False)
        was_won, _ = self._outcome()
        observation = self._send(canonical)
        self._anchor = observation
        won, lost = self._outcome()
        reward, terminated, truncated = self._episode.record(won and not was_won, lost, action_valid=True)
        return observation, reward, terminated, truncated, self._info(action_valid=True)


class JavaObjectAdapter(EnvironmentAdapter):
    """An adapter driving one Java ``PythonInterface`` object on a ``JavaBackend``.

    Args:
        spec: What to build.
        reward: Step reward settings.
        backend: The JVM to run on; the object is created at once (``_on_connect`` then
            loads what the adapter needs on it).
    """

    java_class: ClassVar[str]
    """The simulator's Java entry point."""

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None, backend: JavaBackend) -> None:
        super().__init__(spec, reward)
        self.backend = backend
        self._interface, self._generation = None, 0
        self._connect()

    def _connect(self) -> None:
        self._interface, self._generation = self.backend.new_object(self.java_class, timeout_s=self.spec.step_timeout_s)
        self._on_connect()

    def _on_connect(self) -> None:
        """Prepare a new Java object (first build and after ``restart``)."""

    def guarded(self, read: Callable[[Any], Any]) -> Any:
        """``read(java_object)`` through the backend's guard (and its watchdog:
        ``spec.step_timeout_s``): how code outside the adapter (State2State's fact readers)
        reads the simulator's state; copy what it needs inside ``read``."""
        if self._interface is None:
            raise RuntimeError(f"This {self.display_name} environment is closed.")
        interface = self._interface
        return self.backend.call(self._generation, lambda: read(interface), timeout_s=self.spec.step_timeout_s)

    def _call(self, method_name: str, *args: Any) -> Any:
        """Call a method of this environment's Java object (guarded)."""
        return self.guarded(lambda interface: getattr(interface, method_name)(*args))

    def _call_list(self, method_name: str, convert: Callable[[Any], Any] = str) -> list:
        """Call a Java method returning a list and copy it (``convert`` on each item) inside
        the guarded call."""
        return self.guarded(lambda interface: [convert(item) for item in getattr(interface, method_name)()])

    def restart(self) -> None:
        """Reconnect after a crash: a new JVM if the old one died, a new Java object on it."""
        self._episode.stop()
        self._connect()

    def close(self) -> None:
        """Drop this environment's Java object (a shared JVM stays for the others)."""
        self._episode.stop()
        self._interface = None


class InProcessEngineAdapter(EnvironmentAdapter):
    """An adapter playing game files with a TextWorld engine inside this process.

    ``backend`` is the engine (None until the first ``reset``). Subclasses say how to start
    one (``_start_engine``); the engine's state after each call is ``self._state``.
    """

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None = None) -> None:
        super().__init__(spec, reward)
        self.backend = None

    def _start_engine(self, game_file: str) -> Any:
        """A new engine playing ``game_file``."""
        raise NotImplementedError

    def _engine(self, call: Callable[[], Any]) -> Any:
        """Run ``call``; an engine error ends the episode and becomes a crash error."""
        try:
            return call()
        except (EnvironmentConfigError, EnvironmentCrashedError):
            raise
        except Exception as error:
            self._episode.stop()
            raise EnvironmentCrashedError(
                f"The {self.display_name} engine failed ({type(error).__name__}: {error}); call restart()."
            ) from error

    def _load_and_reset(self, game_file: str) -> Any:
        """End the episode, load ``game_file`` (starting the engine on first use) and reset
        it; return the engine's first state."""
        self._episode.stop()
        if self.backend is None:
            self.backend = self._engine(lambda: self._start_engine(game_file))
        else:
            self._engine(lambda: self.backend.load(game_file))
        return self._engine(self.backend.reset)

    @property
    def state(self) -> Any:
        """The engine's state after the latest call (None before the first ``reset``); read
        only (State2State's fact reader)."""
        return self._state

    def _listed_actions(self) -> Sequence[str]:
        """TextWorld's admissible commands in the current state."""
        return self._state["admissible_commands"]

    def restart(self) -> None:
        """Drop the game engine; the next ``reset`` starts a fresh one."""
        self._episode.stop()
        old, self.backend = self.backend, None
        if old is not None:
            try:
                old.close()
            except Exception as error:  # a broken engine may fail to close; it is dropped anyway
                logger.debug("closing a failed %s engine: %s", self.display_name, error)

    def close(self) -> None:
        """Release the game engine."""
        self.restart()

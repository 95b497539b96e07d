"""TextWorldExpress (PyPI ``textworld-express``) behind the ``TextEnvironment`` interface.

Games. Every game TextWorldExpress 1.1 ships: twc, cookingworld, coin, mapreader,
arithmetic, sorting, simonsays, peckingorder. ``spec.params`` are the game's own
parameters (``GAME_PARAMETERS`` lists them; values are integers, e.g. twc
``{"numLocations": 1, "numItemsToPutAway": 2}``); an unknown game, an unknown parameter, a
non-integer value or a value the simulator rejects raises ``EnvironmentConfigError`` naming
them. Folds: ``split`` is passed as TextWorldExpress's ``gameFold`` (train/dev/test draw
their object names from disjoint sets), and ``seeds(split, ...)`` hands out the simulator's
official seeds of that fold (1000 each: train 0-999, dev 10000-10999, test 20000-20999);
``reset`` refuses a seed of another fold, so no test task leaks into training.

Invalid actions. TextWorldExpress answers an action it does not know with "Unknown action:
I'm not sure what you mean." and leaves the state as it was; it lists every action it
accepts in ``validActions``. This adapter checks the action against that list *before*
sending it (ignoring case and extra spaces, see ``actions.match_valid_action``) and does not
send an invalid one: the step is a no-op with ``action_valid=False``, the observation is the
simulator's own "Unknown action" text, and the anchor observation stays that of the
unchanged state. Checking the list is exact and needs no parsing of reply texts.

Cost (measured on 2 cores, Java 17). ``TextWorldExpressEnv`` (the package's Python class)
starts one JVM per instance: ~0.12 s and 66-80 MB RSS each, so 32 of them would take
~2.4 GB. This adapter drives the same Java entry point (``PythonInterface``) but puts every
environment of the process on ONE shared JVM (``java_backend.shared_backend``): building
one more environment takes ~8 ms and ~0.2 MB of live Java heap. Pass
``backend=JavaBackend(...)`` to give one its own JVM. Random valid actions over 32
environments ran at ~15,000 steps/s (one py4j round trip per step); 200 gold episodes of
twc + cookingworld, JVM start included, took 2 s.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from textworld_express.constants import JAR_PATH

from hindsight.envs.actions import match_valid_action
from hindsight.envs.base import (
    SPLITS,
    EnvironmentConfigError,
    EnvironmentSpec,
    StepResult,
    TextEnvironment,
)
from hindsight.envs.episode import EpisodeTracker, make_info
from hindsight.envs.java_backend import JavaBackend, shared_backend
from hindsight.envs.reward import RewardConfig

logger = logging.getLogger(__name__)

ENV_NAME = "textworldexpress"
JAVA_CLASS = "textworldexpress.runtime.PythonInterface"
INVALID_ACTION_OBSERVATION = "Unknown action: I'm not sure what you mean."

GAME_PARAMETERS: dict[str, tuple[str, ...]] = {
    "twc": ("numLocations", "numItemsToPutAway", "includeDoors", "limitInventorySize"),
    "cookingworld": ("numLocations", "numIngredients", "numDistractorItems", "includeDoors", "limitInventorySize"),
    "coin": ("numLocations", "numDistractorItems", "includeDoors", "limitInventorySize"),
    "mapreader": (
        "numLocations",
        "maxDistractorItemsPerLocation",
        "includeDoors",
        "limitInventorySize",
        "maxDistanceApart",
    ),
    "arithmetic": (),
    "sorting": (),
    "simonsays": ("gameLength", "numDistractors", "memorization", "verbose"),
    "peckingorder": (),
}
"""Each game's parameters (as TextWorldExpress 1.1.0 reports them); all take integers."""


def format_game_params(game: str, params: dict[str, Any]) -> str:
    """Validate ``params`` for ``game`` and format them as TextWorldExpress's "k=v,k=v".

    Raises:
        EnvironmentConfigError: Unknown game, unknown parameter or a non-integer value.
    """
    if game not in GAME_PARAMETERS:
        raise EnvironmentConfigError(
            f"Unknown TextWorldExpress game {game!r}; supported games: {', '.join(GAME_PARAMETERS)}."
        )
    known = GAME_PARAMETERS[game]
    unknown = [name for name in params if name not in known]
    if unknown:
        raise EnvironmentConfigError(
            f"Unknown parameter(s) {unknown} for TextWorldExpress game {game!r}; "
            f"its parameters are: {', '.join(known) if known else '(none)'}."
        )
    parts = []
    for name, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise EnvironmentConfigError(
                f"TextWorldExpress game {game!r}: parameter {name!r} must be an integer, got {value!r}."
            )
        parts.append(f"{name}={value}")
    return ",".join(parts)


class TextWorldExpressEnvironment(TextEnvironment):
    """One TextWorldExpress game (see the module docstring).

    Args:
        spec: ``env="textworldexpress"``, the game name, its parameters and ``max_steps``.
        reward: Step reward settings.
        backend: The JVM to run on (default: the process-wide shared one).
    """

    def __init__(
        self, spec: EnvironmentSpec, reward: RewardConfig | None = None, backend: JavaBackend | None = None
    ) -> None:
        self.spec = spec
        self.game = spec.game
        self.game_params = format_game_params(spec.game, dict(spec.params))
        self.backend = backend or shared_backend(JAR_PATH, "TextWorldExpress")
        self._episode = EpisodeTracker(spec.max_steps, reward or RewardConfig())
        self._seeds_by_split: dict[str, list[int]] = {}
        self._seed_sets: dict[str, set[int]] = {}
        self._interface, self._generation = None, 0
        self._connect()

    def _connect(self) -> None:
        self._interface, self._generation = self.backend.new_object(JAVA_CLASS)
        message = self._call("load", self.game, self.game_params)
        if message:
            raise EnvironmentConfigError(
                f"TextWorldExpress rejected game {self.game!r} with parameters "
                f"{dict(self.spec.params)}: {str(message).strip()}"
            )

    def _call(self, method_name: str, *args: Any) -> Any:
        if self._interface is None:
            raise RuntimeError("This TextWorldExpress environment is closed.")
        return self.backend.call(self._generation, getattr(self._interface, method_name), *args)

    def _call_list(self, method_name: str) -> list[str]:
        """Call a Java method returning a list and copy it inside the guarded call."""
        if self._interface is None:
            raise RuntimeError("This TextWorldExpress environment is closed.")
        method = getattr(self._interface, method_name)
        return self.backend.call(self._generation, lambda: [str(item) for item in method()])

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` official seeds of fold ``split`` from position ``offset`` (see module doc)."""
        available = self._split_seeds(split)
        if offset < 0 or count < 0 or offset + count > len(available):
            raise EnvironmentConfigError(
                f"TextWorldExpress {self.game!r} has {len(available)} {split} seeds; "
                f"asked for {count} from offset {offset}."
            )
        return available[offset : offset + count]

    def _split_seeds(self, split: str) -> list[int]:
        if split not in SPLITS:
            raise EnvironmentConfigError(f"Unknown split {split!r}; expected one of {SPLITS}.")
        if split not in self._seeds_by_split:
            getter = {"train": "getSeedsTrain", "dev": "getSeedsDev", "test": "getSeedsTest"}[split]
            self._seeds_by_split[split] = [int(seed) for seed in self._call_list(getter)]
        return self._seeds_by_split[split]

    def _split_seed_set(self, split: str) -> set[int]:
        if split not in self._seed_sets:
            self._seed_sets[split] = set(self._split_seeds(split))
        return self._seed_sets[split]

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Generate game ``seed`` of fold ``split``; return (observation, info)."""
        if int(seed) not in self._split_seed_set(split):
            raise EnvironmentConfigError(
                f"Seed {seed} is not a {split} seed of TextWorldExpress (use seeds({split!r}, ...))."
            )
        self._episode.stop()
        response = json.loads(self._call("generateNewGameJSON", int(seed), split, True))
        self._task = str(self._call("getTaskDescription")).strip()
        self._gold: list[str] | None = None
        self._episode.start()
        self._state = response
        observation = response["observation"].strip()
        self._anchor = observation
        return observation, self._info(action_valid=True)

    def step(self, action: str) -> StepResult:
        """Play ``action``; an action not in the valid list is a no-op (see module doc)."""
        self._episode.check_can_step()
        canonical = match_valid_action(action, self._state["validActions"])
        if canonical is None:
            reward, terminated, truncated = self._episode.record(False, False, action_valid=False)
            return INVALID_ACTION_OBSERVATION, reward, terminated, truncated, self._info(action_valid=False)
        was_won = bool(self._state["tasksuccess"])
        self._state = json.loads(self._call("stepJSON", canonical))
        observation = self._state["observation"].strip()
        self._anchor = observation
        won_now = bool(self._state["tasksuccess"]) and not was_won
        reward, terminated, truncated = self._episode.record(
            won_now, bool(self._state["taskfailure"]), action_valid=True
        )
        return observation, reward, terminated, truncated, self._info(action_valid=True)

    def _info(self, action_valid: bool) -> dict[str, Any]:
        state = self._state
        return make_info(
            task=self._task,
            task_type=self.game,
            valid_actions=sorted(state["validActions"]),
            anchor_observation=self._anchor,
            won=bool(state["tasksuccess"]),
            action_valid=action_valid,
            score=float(state["score"]),
            inventory=str(state.get("inventory", "")).strip(),
            lost=bool(state["taskfailure"]),
            moves=self._episode.steps,
        )

    def gold_actions(self) -> list[str]:
        """The simulator's gold action sequence for the current game."""
        if not self._episode.active:
            raise RuntimeError("gold_actions() needs a game: call reset(seed, split) first.")
        if self._gold is None:
            self._gold = self._call_list("getGoldActionSequence")
        return list(self._gold)

    def restart(self) -> None:
        """Reconnect after a crash: a new JVM if the old one died, a new game object on it."""
        self._episode.stop()
        self._connect()

    def close(self) -> None:
        """Drop this environment's Java object (the shared JVM stays for the others)."""
        self._episode.stop()
        self._interface = None

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

Cost. ``TextWorldExpressEnv`` (the package's Python class) starts one JVM per instance.
This adapter drives the same Java entry point (``PythonInterface``) but puts every
environment of the process on ONE shared JVM (``java_backend.shared_backend``), so one
more environment costs milliseconds and a fraction of a MB (docs/measurements.md). Pass
``backend=JavaBackend(...)`` to give one its own JVM.

Faults. A killed JVM makes the next call raise ``EnvironmentCrashedError``; a call that runs
past ``spec.step_timeout_s`` (default 60 s; a stopped or looping JVM) gets the JVM killed by
the backend's watchdog and raises ``EnvironmentTimeoutError``. ``restart()`` then connects
to a fresh JVM (0.6 s measured, ``benchmarks/reliability_envs.py``); every environment that
shared the dead JVM needs its own ``restart()``. The rollout engine does this itself and
replays each episode that was live on it from its start (``hindsight.rollout.replay``). The
JVM's process id is ``backend.pid`` (``java_backend.shared_backend(JAR_PATH,
"TextWorldExpress")`` is the process-wide one).

Coin. The simulator's own coin sequence differs from call to call, so the gold sequence is
``coin_expert``'s shortest way through the map its walk finds (once per episode, before the
first step); ``action_labels`` labels a play with that map's exact optimal sets
(``coin_optimal``), replaying it on the game to check the model's rooms.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Sequence

from textworld_express.constants import JAR_PATH

from hindsight.envs.action_labels import ActionLabels
from hindsight.envs.adapter import JavaObjectAdapter, ListedActionStep, seed_window
from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec, check_split
from hindsight.envs.coin_expert import CoinMap, walk_map
from hindsight.envs.coin_optimal import CoinModel, label_play, observe_game
from hindsight.envs.tracker import make_info
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


_FOLD_SEEDS: dict[tuple[str, str, str], tuple[list[int], frozenset[int]]] = {}
"""Each fold's official seeds (as a list and as a set) by (game, game parameters, split):
the same for every environment of one game, so a process asks the JVM once, not once per
environment made (a rollout makes one per live episode; a train fold's list is long)."""


class TextWorldExpressEnvironment(ListedActionStep, JavaObjectAdapter):
    """One TextWorldExpress game (see the module docstring).

    Args:
        spec: ``env="textworldexpress"``, the game name, its parameters and ``max_steps``.
        reward: Step reward settings.
        backend: The JVM to run on (default: the process-wide shared one).
    """

    display_name = "TextWorldExpress"
    java_class = JAVA_CLASS
    invalid_action_observation = INVALID_ACTION_OBSERVATION

    def __init__(
        self, spec: EnvironmentSpec, reward: RewardConfig | None = None, backend: JavaBackend | None = None
    ) -> None:
        self.game = spec.game
        self.game_params = format_game_params(spec.game, dict(spec.params))
        self._coin_walk: tuple[str, CoinMap] | None = None  # this episode's (start room, map): _walked_coin_map
        super().__init__(spec, reward, backend or shared_backend(JAR_PATH, self.display_name))

    def _on_connect(self) -> None:
        message = self._call("load", self.game, self.game_params)
        if message:
            raise EnvironmentConfigError(
                f"TextWorldExpress rejected game {self.game!r} with parameters "
                f"{dict(self.spec.params)}: {str(message).strip()}"
            )

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` official seeds of fold ``split`` from position ``offset`` (see module doc)."""
        return seed_window(
            self._split_seeds(split), count, offset, f"TextWorldExpress {self.game!r}", f"{split} seeds"
        )

    def fold_size(self, split: str) -> int:
        """How many official seeds fold ``split`` holds."""
        return len(self._split_seeds(split))

    def _split_seeds(self, split: str) -> list[int]:
        return self._fold(split)[0]

    def _split_seed_set(self, split: str) -> frozenset[int]:
        return self._fold(split)[1]

    def _fold(self, split: str) -> tuple[list[int], frozenset[int]]:
        check_split(split)
        key = (self.game, self.game_params, split)
        if key not in _FOLD_SEEDS:
            getter = {"train": "getSeedsTrain", "dev": "getSeedsDev", "test": "getSeedsTest"}[split]
            seeds = self._call_list(getter, int)
            _FOLD_SEEDS[key] = (seeds, frozenset(seeds))
        return _FOLD_SEEDS[key]

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Generate game ``seed`` of fold ``split``; return (observation, info)."""
        if int(seed) not in self._split_seed_set(split):
            raise EnvironmentConfigError(
                f"Seed {seed} is not a {split} seed of TextWorldExpress (use seeds({split!r}, ...))."
            )
        self._episode.stop()
        self._state = json.loads(self._call("generateNewGameJSON", int(seed), split, True))
        self._generated = (int(seed), split)
        self._task = str(self._call("getTaskDescription")).strip()
        self._coin_walk = None
        return self._start_episode(self._state["observation"].strip())

    def _listed_actions(self) -> Sequence[str]:
        return self._state["validActions"]

    def _send(self, action: str) -> str:
        self._state = json.loads(self._call("stepJSON", action))
        return self._state["observation"].strip()

    def _outcome(self) -> tuple[bool, bool]:
        return bool(self._state["tasksuccess"]), bool(self._state["taskfailure"])

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

    def _expert_actions(self) -> list[str]:
        if self.game == "coin":  # the simulator's coin sequence differs from call to call: coin_expert
            return self._coin_expert_actions()
        return self._call_list("getGoldActionSequence")

    def _coin_expert_actions(self) -> list[str]:
        """``coin_expert``'s shortest way to the coin through this episode's walked map."""
        start, found = self._walked_coin_map()
        path = found.path(start)
        if not path:
            seed, split = self._generated
            raise EnvironmentConfigError(
                f"TextWorldExpress coin {dict(self.spec.params)}, task {split}/{seed}: the map walk "
                f"found no way to the coin ({len(found.exits)} rooms seen)"
            )
        return path

    def _walked_coin_map(self) -> tuple[str, CoinMap]:
        """(the start room, the map) of ``coin_expert``'s walk on this game, then the same
        task generated again, so that the episode starts where ``reset`` left it; walked
        once per episode, before its first step (the walk replaces the simulator's state)."""
        if self._coin_walk is not None:
            return self._coin_walk
        seed, split = self._generated
        if self._episode.steps:
            raise RuntimeError(
                f"TextWorldExpress coin: the map walk (the expert's actions, the action labels) is asked "
                f"for before the first step (task {split}/{seed} is at step {self._episode.steps})"
            )

        def step(action: str) -> tuple[str, list[str]]:
            walked = json.loads(self._call("stepJSON", action))
            return walked["observation"], list(walked["validActions"])

        walk = walk_map(self._state["observation"], list(self._state["validActions"]), step)
        self._state = json.loads(self._call("generateNewGameJSON", seed, split, True))
        self._coin_walk = walk
        return walk

    def action_labels(self, actions: Sequence[str]) -> ActionLabels | None:
        """Coin: the map's exact optimal sets (source "map", ``coin_optimal``), the actions
        replayed on the game meanwhile and every step from a disagreement with its rooms
        on unlabelled; None where the walk found no coin. Other games: the gold-next proxy."""
        if self.game != "coin":
            return super().action_labels(actions)
        start, found = self._walked_coin_map()
        if found.coin_room is None:
            return None
        return ActionLabels("map", label_play(CoinModel(found), start, actions, observe_game(self)))

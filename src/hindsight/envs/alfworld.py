"""ALFWorld (text version) behind the ``TextEnvironment`` interface, where it is installed.

ALFWorld needs two things this project cannot download for you: the ``alfworld`` package
(``pip install alfworld``) and its game files (``alfworld-download``, ~2 GB, into
``$ALFWORLD_DATA``, default ``~/.cache/alfworld``). Without either, building the
environment raises ``EnvironmentConfigError`` saying exactly which is missing and how to
get it. Nothing here is imported from ``alfworld`` before that check.

Tasks: ``spec.game`` is one of ALFWorld's six task types (``TASK_TYPES``) or ``"all"``;
``spec.params`` accepts ``data_dir`` (overrides ``$ALFWORLD_DATA``). Splits follow
ALFWorld: train = ``train`` (3553 games), dev = ``valid_seen`` (140, seen rooms), test =
``valid_unseen`` (134, unseen rooms). A seed is the index of a game in the sorted list of
that split's solvable games of the chosen type.

Play: each game is a TextWorld PDDL game run in-process with ALFWorld's wrappers (object
names demangled, no shuffling). Task = the "Your task is to: ..." sentence of the first
observation. Invalid actions are handled as in the TextWorld adapter: an action that is not
an admissible command is not sent (``action_valid=False``, state unchanged). The gold
sequence comes from ALFWorld's hand-coded expert, played on a second copy of the game at
the first ``gold_actions()`` call of an episode.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from hindsight.envs.adapter import InProcessEngineAdapter, ListedActionStep, seed_window
from hindsight.envs.base import SPLITS, EnvironmentConfigError, EnvironmentSpec, check_split
from hindsight.envs.tracker import make_info
from hindsight.envs.reward import RewardConfig

logger = logging.getLogger(__name__)

ENV_NAME = "alfworld"
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
SPLIT_FOLDERS = {"train": "train", "dev": "valid_seen", "test": "valid_unseen"}
GAMES_FOLDER = "json_2.1.1"
INVALID_ACTION_OBSERVATION = "Nothing happens."
EXPERT_STEP_LIMIT = 100
_TASK_MARKER = "Your task is to:"


def alfworld_data_dir(params: dict[str, Any]) -> Path:
    """Where the ALFWorld game files are: ``params["data_dir"]``, ``$ALFWORLD_DATA`` or
    ``~/.cache/alfworld``."""
    configured = params.get("data_dir") or os.environ.get("ALFWORLD_DATA") or "~/.cache/alfworld"
    return Path(os.path.expandvars(str(configured))).expanduser()


def check_alfworld_available(data_dir: Path) -> None:
    """Raise ``EnvironmentConfigError`` naming what is missing: the package or the games."""
    try:
        import alfworld  # noqa: F401
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler  # noqa: F401
    except ImportError as error:
        raise EnvironmentConfigError(
            "ALFWorld is not available: the Python package `alfworld` is not installed "
            f"({error}). Install it with `pip install alfworld` (it brings a compatible "
            "textworld), then fetch the game files with `alfworld-download` into "
            "$ALFWORLD_DATA (default ~/.cache/alfworld)."
        ) from None
    games_root = data_dir / GAMES_FOLDER
    missing = [SPLIT_FOLDERS[split] for split in SPLITS if not (games_root / SPLIT_FOLDERS[split]).is_dir()]
    if missing:
        raise EnvironmentConfigError(
            f"ALFWorld game files are missing: no {', '.join(missing)} folder under {games_root}. "
            "Run `alfworld-download` (it writes to $ALFWORLD_DATA, default ~/.cache/alfworld), "
            "or set the `data_dir` parameter / $ALFWORLD_DATA to where the files are."
        )


def _is_solvable(game_file: Path) -> bool:
    try:
        return bool(json.loads(game_file.read_text()).get("solvable", False))
    except (OSError, ValueError):
        return False


def list_games(data_dir: Path, split: str, task_type: str) -> list[Path]:
    """The solvable games of ``split`` and ``task_type`` ("all" for every type), sorted."""
    folder = data_dir / GAMES_FOLDER / SPLIT_FOLDERS[split]
    games = []
    for game_file in sorted(folder.glob("*/*/game.tw-pddl")):
        family = game_file.parent.parent.name.split("-")[0]
        if "movable" in str(game_file) or "Sliced" in str(game_file):
            continue  # ALFWorld itself skips these
        if (task_type == "all" or family == task_type) and _is_solvable(game_file):
            games.append(game_file)
    return games


def split_task(feedback: str) -> tuple[str, str]:
    """(task, observation) from ALFWorld's first reply: the "Your task is to: ..." sentence
    and the room description before it (the welcome banner dropped)."""
    text = str(feedback)
    position = text.find(_TASK_MARKER)
    if position < 0:
        return "", text.strip()
    task = text[position + len(_TASK_MARKER) :].strip().splitlines()[0].strip()
    lines = [line for line in text[:position].strip().splitlines() if not line.strip().startswith("-=")]
    return task, "\n".join(lines).strip()


class AlfWorldEnvironment(ListedActionStep, InProcessEngineAdapter):
    """One ALFWorld game at a time (see the module docstring).

    Args:
        spec: ``env="alfworld"``, a task type or "all", ``{"data_dir": ...}``, ``max_steps``.
        reward: Step reward settings.
    """

    display_name = "ALFWorld"
    invalid_action_observation = INVALID_ACTION_OBSERVATION

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None = None) -> None:
        if spec.game != "all" and spec.game not in TASK_TYPES:
            raise EnvironmentConfigError(
                f"Unknown ALFWorld task type {spec.game!r}; expected 'all' or one of: {', '.join(TASK_TYPES)}."
            )
        unknown = [key for key in spec.params if key != "data_dir"]
        if unknown:
            raise EnvironmentConfigError(f"Unknown ALFWorld parameter(s) {unknown}; accepted: data_dir.")
        self.data_dir = alfworld_data_dir(dict(spec.params))
        check_alfworld_available(self.data_dir)
        self._games: dict[str, list[Path]] = {}
        super().__init__(spec, reward)

    def _split_games(self, split: str) -> list[Path]:
        check_split(split)
        if split not in self._games:
            self._games[split] = list_games(self.data_dir, split, self.spec.game)
        return self._games[split]

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` game indices of ``split`` from position ``offset``."""
        available = range(len(self._split_games(split)))
        return seed_window(
            available, count, offset, "ALFWorld", f"solvable {split} games of type {self.spec.game!r}"
        )

    def fold_size(self, split: str) -> int:
        """How many solvable games of the type ``split`` holds."""
        return len(self._split_games(split))

    def _start_engine(self, game_file: str, with_expert: bool = False):
        import textworld
        from alfworld.agents.environment.alfred_tw_env import (
            AlfredDemangler,
            AlfredExpert,
            AlfredExpertType,
            AlfredInfos,
        )

        extras = ["gamefile"] + (["expert_plan"] if with_expert else [])
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=extras)
        wrappers = [AlfredDemangler(shuffle=False), AlfredInfos]
        if with_expert:
            wrappers.append(AlfredExpert(expert_type=AlfredExpertType.HANDCODED))
        return textworld.start(game_file, infos, wrappers=wrappers)

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Start game number ``seed`` of ``split``."""
        games = self._split_games(split)
        if not 0 <= int(seed) < len(games):
            raise EnvironmentConfigError(f"ALFWorld {split} has games 0-{len(games) - 1}; got {seed}.")
        self._game_file = os.fspath(games[int(seed)])
        self._state = self._load_and_reset(self._game_file)
        self._task, observation = split_task(self._state.feedback)
        return self._start_episode(observation)

    def _send(self, action: str) -> str:
        self._state, _, _ = self._engine(lambda: self.backend.step(action))
        return str(self._state.feedback).strip()

    def _outcome(self) -> tuple[bool, bool]:
        return bool(self._state["won"]), False

    def _info(self, action_valid: bool) -> dict[str, Any]:
        won = bool(self._state["won"])
        return make_info(
            task=self._task,
            task_type=Path(self._game_file).parent.parent.name.split("-")[0],
            valid_actions=sorted(self._state["admissible_commands"]),
            anchor_observation=self._anchor,
            won=won,
            action_valid=action_valid,
            score=1.0 if won else 0.0,
            inventory="",
            lost=False,
            moves=self._episode.steps,
        )

    def _expert_actions(self) -> list[str]:
        """The hand-coded expert's actions, played on a separate copy of the current game."""
        return self._engine(self._play_expert)

    def _play_expert(self) -> list[str]:
        engine = self._start_engine(self._game_file, with_expert=True)
        try:
            state, actions = engine.reset(), []
            while not state["won"] and len(actions) < EXPERT_STEP_LIMIT:
                action = state["extra.expert_plan"][0]
                actions.append(action)
                state, _, _ = engine.step(action)
            return actions
        finally:
            engine.close()

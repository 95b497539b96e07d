"""TextWorld games, generated locally from a seed, behind the ``TextEnvironment`` interface.

``spec.game`` is the game type ("custom", "tw-simple", "tw-cooking", "tw-coin_collector",
"tw-treasure_hunter") and ``spec.params`` its settings (see ``textworld_games``), plus one
adapter option, ``cache_dir`` (default ``data/01_raw/textworld_games``). ``reset(seed,
split)`` generates game ``seed`` on first use (about 1 s for a small custom game; then
cached) and plays it with TextWorld's own engine (Inform 7 compiled to Z-machine, run by
Jericho in this process). Splits are disjoint seed ranges: ``seeds("dev", 3)`` is
``[1000000, 1000001, 1000002]``.

What the agent sees: the task is the game's objective text; the first observation is the
room description; later observations are the game's replies without the prompt and status
line. Valid actions are TextWorld's admissible commands; the gold sequence is the game's
walkthrough (its winning policy when the game has none).

Invalid actions: an action that is not an admissible command (ignoring case and extra
spaces) is not sent to the game, as for TextWorldExpress: the step is a no-op with
``action_valid=False`` and the observation ``INVALID_ACTION_OBSERVATION``. The Z-machine
parser would accept some such text (synonyms, abbreviations) and change the state in ways
the admissible list does not describe; refusing them keeps the list the single truth.

Crashes: the game engine runs inside Python, so there is no process to die; any error from
it surfaces as ``EnvironmentCrashedError`` and ``restart()`` starts a fresh engine.
Steps take ~3-4 ms (the engine replays "look" and "inventory" for the info).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from hindsight.envs.adapter import InProcessEngineAdapter, ListedActionStep, seed_window
from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.tracker import make_info
from hindsight.envs.reward import RewardConfig
from hindsight.envs.textworld_games import (
    DEFAULT_CACHE_DIR,
    ensure_game,
    game_settings,
    split_seed_range,
)

logger = logging.getLogger(__name__)

ENV_NAME = "textworld"
INVALID_ACTION_OBSERVATION = "That action is not available here."


def clean_feedback(text: str) -> str:
    """A game reply without the command prompt and status line TextWorld appends, with
    each line trimmed and runs of blank lines collapsed to one."""
    kept: list[str] = []
    for line in str(text).splitlines():
        line = line.strip()
        if line.startswith(">"):
            break
        if line or (kept and kept[-1]):
            kept.append(line)
    return "\n".join(kept).strip()


def _request_infos():
    import textworld

    return textworld.EnvInfos(
        admissible_commands=True,
        policy_commands=True,
        won=True,
        lost=True,
        score=True,
        max_score=True,
        inventory=True,
        description=True,
        objective=True,
        extras=["walkthrough"],
    )


class TextWorldEnvironment(ListedActionStep, InProcessEngineAdapter):
    """One generated TextWorld game at a time (see the module docstring).

    Args:
        spec: ``env="textworld"``, the game type, its settings (+ ``cache_dir``), ``max_steps``.
        reward: Step reward settings.
    """

    display_name = "TextWorld"
    invalid_action_observation = INVALID_ACTION_OBSERVATION

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None = None) -> None:
        params = dict(spec.params)
        self.cache_dir = os.fspath(params.pop("cache_dir", DEFAULT_CACHE_DIR))
        self.game_type = spec.game
        self.settings = game_settings(spec.game, params)
        super().__init__(spec, reward)

    def _start_engine(self, game_file: str):
        import textworld

        return textworld.start(game_file, _request_infos())

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` generation seeds of ``split`` from position ``offset``."""
        return seed_window(split_seed_range(split), count, offset, "TextWorld", f"{split} seeds")

    def fold_size(self, split: str) -> int:
        """How many generation seeds ``split`` holds."""
        return len(split_seed_range(split))

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Generate (or reuse) game ``seed`` of ``split`` and start it."""
        game_file = os.fspath(ensure_game(self.cache_dir, self.game_type, self.settings, split, int(seed)))
        self._state = self._load_and_reset(game_file)
        walkthrough = self._state.get("extra.walkthrough") or self._state.get("policy_commands") or []
        self._task = " ".join(str(self._state["objective"]).split())
        return self._start_episode(
            clean_feedback(self._state["description"]), gold=[str(action) for action in walkthrough]
        )

    def _send(self, action: str) -> str:
        self._state, _, _ = self._engine(lambda: self.backend.step(action))
        return clean_feedback(self._state.feedback)

    def _outcome(self) -> tuple[bool, bool]:
        return bool(self._state["won"]), bool(self._state["lost"])

    def _info(self, action_valid: bool) -> dict[str, Any]:
        state = self._state
        max_score = state["max_score"] or 0
        return make_info(
            task=self._task,
            task_type=self.game_type,
            valid_actions=sorted(state["admissible_commands"]),
            anchor_observation=self._anchor,
            won=bool(state["won"]),
            action_valid=action_valid,
            score=float(state["score"]) / max_score if max_score else 0.0,
            inventory=clean_feedback(state["inventory"]),
            lost=bool(state["lost"]),
            moves=self._episode.steps,
        )

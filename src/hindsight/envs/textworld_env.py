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
from typing import Any, Callable

from hindsight.envs.actions import match_valid_action
from hindsight.envs.base import (
    EnvironmentConfigError,
    EnvironmentCrashedError,
    EnvironmentSpec,
    StepResult,
    TextEnvironment,
)
from hindsight.envs.episode import EpisodeTracker, make_info
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


class TextWorldEnvironment(TextEnvironment):
    """One generated TextWorld game at a time (see the module docstring).

    Args:
        spec: ``env="textworld"``, the game type, its settings (+ ``cache_dir``), ``max_steps``.
        reward: Step reward settings.
    """

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None = None) -> None:
        self.spec = spec
        params = dict(spec.params)
        self.cache_dir = os.fspath(params.pop("cache_dir", DEFAULT_CACHE_DIR))
        self.game_type = spec.game
        self.settings = game_settings(spec.game, params)
        self.backend = None
        self._episode = EpisodeTracker(spec.max_steps, reward or RewardConfig())

    def _engine(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except (EnvironmentConfigError, EnvironmentCrashedError):
            raise
        except Exception as error:
            self._episode.stop()
            raise EnvironmentCrashedError(
                f"The TextWorld engine failed ({type(error).__name__}: {error}); call restart()."
            ) from error

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` generation seeds of ``split`` from position ``offset``."""
        seed_range = split_seed_range(split)
        if offset < 0 or count < 0 or offset + count > len(seed_range):
            raise EnvironmentConfigError(
                f"TextWorld has {len(seed_range)} {split} seeds; asked for {count} from offset {offset}."
            )
        return list(seed_range[offset : offset + count])

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Generate (or reuse) game ``seed`` of ``split`` and start it."""
        game_file = os.fspath(ensure_game(self.cache_dir, self.game_type, self.settings, split, int(seed)))
        self._episode.stop()
        if self.backend is None:
            import textworld

            self.backend = self._engine(lambda: textworld.start(game_file, _request_infos()))
        else:
            self._engine(lambda: self.backend.load(game_file))
        self._state = self._engine(self.backend.reset)
        walkthrough = self._state.get("extra.walkthrough") or self._state.get("policy_commands") or []
        self._gold = [str(action) for action in walkthrough]
        self._task = " ".join(str(self._state["objective"]).split())
        observation = clean_feedback(self._state["description"])
        self._anchor = observation
        self._episode.start()
        return observation, self._info(action_valid=True)

    def step(self, action: str) -> StepResult:
        """Play ``action`` if it is admissible; otherwise a no-op step (see module doc)."""
        self._episode.check_can_step()
        canonical = match_valid_action(action, self._state["admissible_commands"])
        if canonical is None:
            reward, terminated, truncated = self._episode.record(False, False, action_valid=False)
            return INVALID_ACTION_OBSERVATION, reward, terminated, truncated, self._info(action_valid=False)
        was_won = bool(self._state["won"])
        self._state, _, _ = self._engine(lambda: self.backend.step(canonical))
        observation = clean_feedback(self._state.feedback)
        self._anchor = observation
        won = bool(self._state["won"])
        reward, terminated, truncated = self._episode.record(won and not was_won, bool(self._state["lost"]), True)
        return observation, reward, terminated, truncated, self._info(action_valid=True)

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

    def gold_actions(self) -> list[str]:
        """The game's walkthrough (or winning policy) from the start state."""
        if not self._episode.active:
            raise RuntimeError("gold_actions() needs a game: call reset(seed, split) first.")
        return list(self._gold)

    def restart(self) -> None:
        """Drop the game engine; the next ``reset`` starts a fresh one."""
        self._episode.stop()
        old, self.backend = self.backend, None
        if old is not None:
            try:
                old.close()
            except Exception as error:  # a broken engine may fail to close; it is dropped anyway
                logger.debug("closing a failed TextWorld engine: %s", error)

    def close(self) -> None:
        """Release the game engine."""
        self.restart()

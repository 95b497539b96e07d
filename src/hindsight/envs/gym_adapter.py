"""Any registered Gymnasium text environment as a project ``TextEnvironment``.

Configuration: ``environment.env: gym`` and, per entry of ``environment.games``, ``game``:
the Gymnasium id and ``params``: the keyword arguments of ``gymnasium.make``, e.g.

    environment:
      env: gym
      games:
        - game: mypackage/FindKey-v0
          params: {rooms: 2}

The package that registers the id must be imported before the run builds its environments
(``gym_modules`` below, or the package's own import side effect). Each game entry is one
task type (its ``task_type`` unless the environment says another).

What the Gym env must do. Observations and actions are strings (``spaces.Text``).
``reset(seed=k, options={"split": s})`` starts task k of fold s ("train", "dev", "test"):
the project's ``seeds(split, count, offset)`` are the positions ``offset .. offset+count-1``.
The info dict may carry these keys; each has a fallback:

    valid_actions       the actions accepted now (``VALID_ACTIONS_KEY``). Absent: [] (free
                        generation: set ``rollout.sampling.constrained: false``, since constrained
                        decoding needs a list to choose from)
    task                the task text (default: the first observation)
    won                 the task is solved (default: terminated with a positive reward)
    action_valid        the last action was accepted (default True)
    score               progress in [0, 1] (default 1.0 once won, else 0.0)
    inventory, anchor_observation, task_type   (defaults "", the observation, the id)
    gold_actions        (after reset) the expert sequence; or a ``gold_actions()`` method on
                        ``env.unwrapped``. Needed only by ingestion's expert episodes.

Rewards are the project's rule (``envs.reward.step_reward``: success reward on the winning
step, a penalty per invalid action), so every environment the methods see is scored the
same way; the Gym env's own reward is kept in ``info["env_reward"]``. Episodes end when the
Gym env terminates or truncates, or after ``spec.max_steps`` steps.

``spec.params`` key ``gym_modules`` (a list of module names, optional) is imported before
``gymnasium.make`` and not passed to it: a way to register a package's ids from the
configuration alone.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium

from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec, StepResult, TextEnvironment, check_split
from hindsight.envs.reward import RewardConfig
from hindsight.envs.tracker import EpisodeTracker, make_info

GYM_FAMILY = "gym"
"""``environment.env`` (``EnvironmentSpec.env``) of a Gymnasium environment."""
VALID_ACTIONS_KEY = "valid_actions"
"""The info key the adapter reads the valid actions from."""
MODULES_KEY = "gym_modules"


def make_gym(env_id: str, params: dict[str, Any]) -> gymnasium.Env:
    """``gymnasium.make(env_id, **params)`` after importing ``params["gym_modules"]``.

    Raises:
        EnvironmentConfigError: The id is not registered, a module does not import, or the
            environment rejects its keyword arguments.
    """
    kwargs = dict(params)
    modules = kwargs.pop(MODULES_KEY, None) or []
    for module in [modules] if isinstance(modules, str) else modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise EnvironmentConfigError(f"environment.games[].params.{MODULES_KEY}: cannot import {module!r}: {error}") from error
    try:
        return gymnasium.make(env_id, **kwargs)
    except gymnasium.error.Error as error:
        raise EnvironmentConfigError(
            f"environment.games[].game {env_id!r} is not a usable Gymnasium id ({error}); register it "
            f"(gymnasium.register) in a module listed under params.{MODULES_KEY}, or fix the id."
        ) from error
    except TypeError as error:
        raise EnvironmentConfigError(f"Gymnasium env {env_id!r} rejected environment.games[].params {kwargs}: {error}") from error


class GymTextEnvironment(TextEnvironment):
    """A Gymnasium text env behind ``TextEnvironment`` (see the module docstring).

    Args:
        spec: ``env="gym"``, ``game`` the Gymnasium id, ``params`` its make kwargs.
        reward: Step reward settings.
    """

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None = None) -> None:
        self.spec = spec
        self._episode = EpisodeTracker(spec.max_steps, reward or spec.reward)
        self.env = make_gym(spec.game, dict(spec.params))
        self._task = ""
        self._gold: list[str] | None = None
        self._won = False

    def _info(self, observation: str, raw: dict[str, Any], won: bool, action_valid: bool, **extra: Any) -> dict[str, Any]:
        default_score = 1.0 if won else 0.0
        return make_info(
            task=self._task,
            task_type=str(raw.get("task_type", self.spec.game)),
            valid_actions=[str(a) for a in raw.get(VALID_ACTIONS_KEY) or []],
            anchor_observation=str(raw.get("anchor_observation", observation)),
            won=won,
            action_valid=action_valid,
            score=float(raw.get("score", default_score)),
            inventory=str(raw.get("inventory", "")),
            **extra,
        )

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Task ``seed`` of fold ``split``: ``env.reset(seed=seed, options={"split": split})``."""
        check_split(split)
        observation, raw = self.env.reset(seed=int(seed), options={"split": split})
        observation = str(observation)
        self._task = str(raw.get("task") or observation)
        gold = raw.get("gold_actions")
        self._gold = [str(a) for a in gold] if gold is not None else None
        self._won = False
        self._episode.start()
        return observation, self._info(observation, raw, won=False, action_valid=True)

    def step(self, action: str) -> StepResult:
        """Play ``action``; the reward is the project's (the env's own in ``env_reward``)."""
        self._episode.check_can_step()
        observation, env_reward, terminated, truncated, raw = self.env.step(str(action))
        observation = str(observation)
        won = bool(raw.get("won", bool(terminated) and float(env_reward) > 0))
        won_now = won and not self._won
        self._won = self._won or won
        action_valid = bool(raw.get("action_valid", True))
        reward, done, out_of_steps = self._episode.record(won_now, bool(terminated) and not won, action_valid)
        ended_by_env = bool(terminated) or bool(truncated)
        terminated_now = done or bool(terminated)
        truncated_now = not terminated_now and (out_of_steps or bool(truncated))
        if ended_by_env:
            self._episode.finished = True
        info = self._info(observation, raw, won=self._won, action_valid=action_valid, env_reward=float(env_reward))
        return observation, reward, terminated_now, truncated_now, info

    def gold_actions(self) -> list[str]:
        """The expert sequence from ``info["gold_actions"]`` or ``env.unwrapped.gold_actions()``."""
        if self._gold is not None:
            return list(self._gold)
        method = getattr(self.env.unwrapped, "gold_actions", None)
        if callable(method):
            return [str(a) for a in method()]
        raise EnvironmentConfigError(
            f"Gymnasium env {self.spec.game!r} has no expert actions (info['gold_actions'] or a gold_actions() "
            "method); set ingestion.expert_episodes to 0 for it and start from another policy."
        )

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """Positions ``offset .. offset+count-1`` (task k of a fold is ``reset(seed=k)``)."""
        check_split(split)
        if count < 0 or offset < 0:
            raise EnvironmentConfigError(f"seeds: count and offset must be >= 0, got {count}, {offset}.")
        return list(range(offset, offset + count))

    def restart(self) -> None:
        """Close the Gym env and make a fresh one."""
        self.close()
        self.env = make_gym(self.spec.game, dict(self.spec.params))
        self._episode.stop()

    def close(self) -> None:
        """Close the Gym env."""
        self.env.close()

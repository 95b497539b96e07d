"""Infeasible tasks made from real ones, and the action that declares a task infeasible
(EvoCUA's infeasible tasks; the generator is our reading, the paper does not publish one).

An infeasible variant of a task is the same game instance whose goal names an object that
does not exist in it: the right answer is to say so. ``DeclarableEnvironment`` wraps any
``TextEnvironment``:

- infeasible (``infeasible=True``): after ``reset`` the task text becomes
  ``"Your task is to find the <object> and take it."``, the object picked deterministically
  from the seed among ``ABSENT_OBJECT_CANDIDATES`` and checked absent from the first
  observation, the original task text, the inventory and the valid actions (none absent:
  ``EnvironmentConfigError``). The game plays on underneath, but solving the original game
  is not this task: the base environment's win is hidden (``won`` False, no success reward,
  the episode ends there as a failure);
- feasible (``infeasible=False``): the task is unchanged.

On a GUI page (the observation is a page's text view, its first line ``Instruction: ...``:
MiniWoB) the infeasible goal is ``GUI_INFEASIBLE_GOAL`` with the absent object, a label that
no element of the page carries (checked against the whole view), and the view's instruction
line says it in every observation of the episode, since the policy reads its goal there.

Both offer one more valid action, ``DECLARE_ACTION``; it ends the episode. On an
infeasible task it wins (the environment's ``success_reward``, ``won`` True); on a
feasible task it is a failure (reward 0, ``won`` False). Our choice: offering it on
feasible tasks too keeps its presence from telling the policy which tasks are infeasible.

Specs carry the variant, so a ``TaskRef`` names it and the rollout engine's factory builds
it (``declaring_factory``): the game name suffix ``INFEASIBLE_SUFFIX`` marks an infeasible
variant (its ``group_id`` differs from the real task's, ``"env/<game>+infeasible/split/seed"``);
the params key ``DECLARE_PARAM`` marks a feasible task that offers the declare action
(same ``group_id`` as the real task). The factory strips both before building the real
environment.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any, Callable

from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec, StepResult, TextEnvironment
from hindsight.envs.reward import RewardConfig

DECLARE_ACTION = "declare infeasible"
"""The action that declares the current task infeasible (ends the episode)."""
INFEASIBLE_SUFFIX = "+infeasible"
"""Suffix of ``EnvironmentSpec.game`` that marks the infeasible variant of a task."""
DECLARE_PARAM = "offer_declare"
"""``EnvironmentSpec.params`` key (True) of a feasible task that offers ``DECLARE_ACTION``."""
ABSENT_OBJECT_CANDIDATES = (
    "golden telescope", "violin", "chess board", "umbrella", "harpoon", "typewriter", "saxophone",
    "hourglass", "compass rose", "lighthouse lamp", "parachute", "crystal skull",
)
"""Objects an infeasible goal may name (the first absent one in a seed-shuffled order)."""
GUI_INFEASIBLE_GOAL = 'Click on the "{object}" button.'
"""The infeasible goal on a GUI page (``{object}``: the absent object)."""
INSTRUCTION = "Instruction: "
"""How a GUI page's text view starts (``envs.miniwob.view``)."""


def infeasible_spec(spec: EnvironmentSpec) -> EnvironmentSpec:
    """The spec of ``spec``'s infeasible variant."""
    return dataclasses.replace(spec, game=base_spec(spec).game + INFEASIBLE_SUFFIX, params=dict(base_spec(spec).params))


def declare_offered_spec(spec: EnvironmentSpec) -> EnvironmentSpec:
    """The spec of ``spec`` (feasible) offering the declare action."""
    return dataclasses.replace(spec, params={**spec.params, DECLARE_PARAM: True})


def is_infeasible(spec: EnvironmentSpec) -> bool:
    """Whether ``spec`` is an infeasible variant."""
    return spec.game.endswith(INFEASIBLE_SUFFIX)


def is_infeasible_group(group_id: str) -> bool:
    """Whether a ``group_id`` (``env/game/split/seed``) is an infeasible variant's."""
    return str(group_id).rsplit("/", 2)[0].endswith(INFEASIBLE_SUFFIX)


def base_spec(spec: EnvironmentSpec) -> EnvironmentSpec:
    """The real task's spec: both markers removed."""
    game = spec.game[: -len(INFEASIBLE_SUFFIX)] if is_infeasible(spec) else spec.game
    params = {key: value for key, value in spec.params.items() if key != DECLARE_PARAM}
    return dataclasses.replace(spec, game=game, params=params)


def absent_object(seed: int, texts: list[str]) -> str:
    """The first of ``ABSENT_OBJECT_CANDIDATES`` (in an order fixed by ``seed``) that no
    text of ``texts`` mentions (case-insensitive)."""
    seen = " ".join(texts).lower()
    candidates = list(ABSENT_OBJECT_CANDIDATES)
    random.Random(seed).shuffle(candidates)
    for candidate in candidates:
        if candidate not in seen and candidate.split()[-1] not in seen:
            return candidate
    raise EnvironmentConfigError(f"no absent object for an infeasible variant of task seed {seed}: every candidate is in the game")


class DeclarableEnvironment(TextEnvironment):
    """A task (``infeasible=False``) or its infeasible variant, with ``DECLARE_ACTION``
    (module docstring)."""

    def __init__(self, env: TextEnvironment, infeasible: bool) -> None:
        self.env, self.infeasible = env, infeasible
        self.spec = infeasible_spec(env.spec) if infeasible else declare_offered_spec(env.spec)
        self.missing_object: str | None = None
        self.gui_goal: str | None = None
        """The infeasible goal written into a GUI page's instruction line (None elsewhere)."""
        self.last_info: dict[str, Any] = {}
        reward = getattr(env.spec, "reward", None)
        self.success_reward = reward.success_reward if reward is not None else RewardConfig().success_reward

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed, split)
        info, self.gui_goal = dict(info), None
        if self.infeasible:
            texts = [observation, str(info.get("task", "")), str(info.get("inventory", "")), *map(str, info.get("valid_actions") or [])]
            self.missing_object = absent_object(seed, texts)
            info["task"] = f"Your task is to find the {self.missing_object} and take it."
            if str(observation).startswith(INSTRUCTION):
                self.gui_goal = info["task"] = GUI_INFEASIBLE_GOAL.format(object=self.missing_object)
        return self._view(observation), self._offer(info)

    def _view(self, observation: str) -> str:
        """A GUI page's view with the infeasible goal on its instruction line."""
        if self.gui_goal is None or not str(observation).startswith(INSTRUCTION):
            return observation
        rest = str(observation).split("\n", 1)[1:]
        return "\n".join([INSTRUCTION + self.gui_goal, *rest])

    def step(self, action: str) -> StepResult:
        if action.strip().lower() == DECLARE_ACTION:
            reward = self.success_reward if self.infeasible else 0.0
            info = {**self.last_info, "valid_actions": [], "won": self.infeasible, "action_valid": True, "score": float(self.infeasible)}
            return "You declared the task infeasible.", reward, True, False, info
        observation, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        if self.infeasible and info.get("won"):  # the real game's goal is not this task's
            reward -= self.success_reward
            info["won"], info["score"], terminated = False, 0.0, True
        if self.gui_goal is not None:
            info["task"] = self.gui_goal
        return self._view(observation), reward, terminated, truncated, self._offer(info)

    def _offer(self, info: dict[str, Any]) -> dict[str, Any]:
        actions = list(info.get("valid_actions") or [])
        info["valid_actions"] = actions + [DECLARE_ACTION] if DECLARE_ACTION not in actions else actions
        self.last_info = info
        return info

    def gold_actions(self) -> list[str]:
        return [DECLARE_ACTION] if self.infeasible else self.env.gold_actions()

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        return self.env.seeds(split, count, offset)

    def fold_size(self, split: str) -> int | None:
        return self.env.fold_size(split)

    def restart(self) -> None:
        self.env.restart()

    def close(self) -> None:
        self.env.close()


def declaring_factory(factory: Callable[[EnvironmentSpec], TextEnvironment]) -> Callable[[EnvironmentSpec], TextEnvironment]:
    """``factory`` that also builds the variants the spec markers ask for (module docstring);
    a spec without a marker goes to ``factory`` unchanged."""

    def make(spec: EnvironmentSpec) -> TextEnvironment:
        if not is_infeasible(spec) and not spec.params.get(DECLARE_PARAM):
            return factory(spec)
        return DeclarableEnvironment(factory(base_spec(spec)), infeasible=is_infeasible(spec))

    return make

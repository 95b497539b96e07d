"""The goal-conditioned environment: a real game whose task is a State2State goal.

``GoalConditionedEnvironment`` plays the real environment (same game, fold and seed as the
state the goal came from) and changes only what the agent is asked and when it has won:
``info["task"]`` is the goal's text, ``info["won"]`` is rule-based matching (every goal fact
holds in the current state, ``facts.goal_reached``), ``info["score"]`` the fraction of
goal facts that hold, and the reward follows the spec's ``RewardConfig`` on that win. The
episode ends when the goal is reached, when the real game ends on its own (its task won
or lost: the goal was not reached), or after ``max_steps`` actions.

The RL loop trains on these tasks unchanged: ``goal_task_refs`` turns the task table into
``TaskRef``s of a spec with ``env="state2state"`` (the real family and parameters inside
its params) whose seed is the task id, and ``GoalEnvironmentFactory`` is the loop's
``env_factory``. Group ids read ``state2state/<game>/train/<task_id>``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pandas as pd

from hindsight.envs.adapter import seed_window
from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec, StepResult, TextEnvironment
from hindsight.envs.reward import step_reward
from hindsight.envs.tracker import EpisodeTracker
from hindsight.rollout.tasks import TaskRef
from hindsight.state2state.exploration import params_key
from hindsight.state2state.extractors import extract_facts
from hindsight.state2state.facts import goal_text

GOAL_FAMILY = "state2state"
GOAL_SPLIT = "train"


def goal_spec(base: EnvironmentSpec) -> EnvironmentSpec:
    """The goal environment's spec over the real environment ``base``."""
    return EnvironmentSpec(
        env=GOAL_FAMILY, game=base.game, params={"base_env": base.env, "base_params": dict(base.params)},
        max_steps=base.max_steps, reward=base.reward, step_timeout_s=base.step_timeout_s,
    )


def base_spec(spec: EnvironmentSpec) -> EnvironmentSpec:
    """The real environment's spec inside a goal spec."""
    if spec.env != GOAL_FAMILY:
        raise EnvironmentConfigError(f"Not a State2State goal spec (env={spec.env!r}, expected {GOAL_FAMILY!r}).")
    return EnvironmentSpec(
        env=spec.params["base_env"], game=spec.game, params=dict(spec.params["base_params"]),
        max_steps=spec.max_steps, reward=spec.reward, step_timeout_s=spec.step_timeout_s,
    )


def _instance_key(env: str, game: str, params: str) -> tuple[str, str, str]:
    return env, game, params


def goal_task_refs(tasks: pd.DataFrame, specs: Sequence[EnvironmentSpec]) -> list[TaskRef]:
    """One ``TaskRef`` per task of the table, on the goal spec of its game's spec in ``specs``.

    Raises:
        EnvironmentConfigError: A task whose game is not among ``specs`` (a task set
            explored with other environment settings).
    """
    by_key = {_instance_key(spec.env, spec.game, params_key(spec.params)): spec for spec in specs}
    refs = []
    for row in tasks.itertuples(index=False):
        key = _instance_key(row.env, row.game, row.params)
        if key not in by_key:
            raise EnvironmentConfigError(
                f"state2state_tasks task {row.task_id}: game {key} is not one of the environment's games "
                f"{sorted(by_key)}; explore again with these settings."
            )
        refs.append(TaskRef(spec=goal_spec(by_key[key]), seed=int(row.task_id), split=GOAL_SPLIT))
    return refs


class GoalEnvironmentFactory:
    """``env_factory`` of the goal environments of one task table (real ones from ``base_factory``)."""

    def __init__(self, tasks: pd.DataFrame, base_factory: Callable | None = None) -> None:
        if base_factory is None:
            from hindsight.envs import make_env as base_factory
        self.base_factory = base_factory
        self.tasks = {int(row.task_id): row for row in tasks.itertuples(index=False)}

    def __call__(self, spec: EnvironmentSpec, reward=None) -> "GoalConditionedEnvironment":
        real = base_spec(spec)
        base = self.base_factory(real) if reward is None else self.base_factory(real, reward)
        key = _instance_key(real.env, real.game, params_key(real.params))
        own = {task_id: row for task_id, row in self.tasks.items() if _instance_key(row.env, row.game, row.params) == key}
        return GoalConditionedEnvironment(spec, base, own)


class GoalConditionedEnvironment(TextEnvironment):
    """A real environment playing State2State goals (see the module docstring).

    Args:
        spec: The goal spec (``goal_spec``).
        base: The real environment.
        tasks: Task id -> task-table row, for the tasks of this real game.
    """

    def __init__(self, spec: EnvironmentSpec, base: TextEnvironment, tasks: dict[int, Any]) -> None:
        self.spec = spec
        self.base = base
        self.tasks = tasks
        self._tracker = EpisodeTracker(spec.max_steps, spec.reward)
        self._goal: frozenset[str] = frozenset()
        self._task: Any = None
        self._won = False

    def reset(self, seed: int, split: str = GOAL_SPLIT) -> tuple[str, dict[str, Any]]:
        """Start task ``seed`` (a task id): reset the real game to the task's fold and seed."""
        if int(seed) not in self.tasks:
            raise EnvironmentConfigError(
                f"State2State task {seed} is not a task of game {self.spec.game!r} (have {sorted(self.tasks)[:10]}...)."
            )
        self._task = self.tasks[int(seed)]
        self._goal = frozenset(self._task.goal)
        observation, info = self.base.reset(int(self._task.seed), str(self._task.split))
        self._tracker.start()
        self._won = False
        return observation, self._goal_info(info)

    def _goal_info(self, info: dict[str, Any]) -> dict[str, Any]:
        facts = extract_facts(self.base)
        held = len(self._goal & facts)
        self._won = held == len(self._goal)
        return {
            **info, "task": goal_text(self._goal), "task_type": f"{self.spec.game}_goal",
            "won": self._won, "score": held / len(self._goal), "real_task_won": bool(info.get("won", False)),
        }

    def step(self, action: str) -> StepResult:
        """Play ``action`` in the real game and judge the goal."""
        self._tracker.check_can_step()
        was_won = self._won
        observation, _, real_terminated, _, info = self.base.step(action)
        info = self._goal_info(info)
        lost = bool(real_terminated and not self._won)
        info["lost"] = lost
        won_now = self._won and not was_won
        _, terminated, truncated = self._tracker.record(won_now, lost, info["action_valid"])
        info["moves"] = self._tracker.steps
        return observation, step_reward(won_now, info["action_valid"], self.spec.reward), terminated, truncated, info

    def gold_actions(self) -> list[str]:
        """The recorded path that reached a state holding the goal."""
        if self._task is None:
            raise RuntimeError("gold_actions() needs a task: call reset(task_id) first.")
        return list(self._task.path)

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """Task ids of this game (all in the ``train`` fold)."""
        available = sorted(self.tasks) if split == GOAL_SPLIT else []
        return seed_window(available, count, offset, f"State2State game {self.spec.game!r}", f"{split} tasks")

    def restart(self) -> None:
        self._tracker.stop()
        self.base.restart()

    def close(self) -> None:
        self.base.close()

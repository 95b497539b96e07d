"""Exploration: record the states that random and policy rollouts reach, as fact sets.

``FactRecordingEnvironment`` wraps any environment: after ``reset`` and after every
accepted action it reads the state's facts (``extractors``, without acting) and appends a
record to a shared list, with the action path that led there. The rollout engine and the
random agent play it as they play any environment (``recording_factory`` is their
``env_factory``), so exploration reuses them unchanged.

A record: ``env``, ``game``, ``params`` (JSON), ``split``, ``seed``, ``source``
(random / policy), ``episode`` (a number, per wrapper), ``step`` (accepted actions so
far), ``facts`` (sorted list), ``path`` (the accepted actions that led there).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
from typing import Any, Callable, Sequence

import pandas as pd

from hindsight.envs.base import EnvironmentSpec, StepResult, TextEnvironment
from hindsight.policy import Policy
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.random_agent import run_random_agent
from hindsight.rollout.tasks import TaskRef
from hindsight.state2state.extractors import extract_facts

logger = logging.getLogger(__name__)

STATE_COLUMNS = ["env", "game", "params", "split", "seed", "source", "episode", "step", "facts", "path"]


def params_key(params: dict[str, Any]) -> str:
    """A spec's game parameters as canonical JSON (a table column and a join key)."""
    return json.dumps(dict(params), sort_keys=True)


class FactRecordingEnvironment(TextEnvironment):
    """``base`` with every reached state recorded into ``records`` (see the module docstring)."""

    def __init__(self, base: TextEnvironment, records: list[dict], source: str, episode_numbers=None) -> None:
        self.base = base
        self.spec = base.spec
        self.records = records
        self.source = source
        self._episode_numbers = episode_numbers if episode_numbers is not None else itertools.count(1)
        self._episode: dict[str, Any] | None = None
        self._path: list[str] = []

    def _record(self) -> None:
        facts = sorted(extract_facts(self.base))
        self.records.append({**self._episode, "step": len(self._path), "facts": facts, "path": list(self._path)})

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        observation, info = self.base.reset(seed, split)
        self._path = []
        self._episode = {
            "env": self.spec.env, "game": self.spec.game, "params": params_key(self.spec.params),
            "split": split, "seed": int(seed), "source": self.source, "episode": next(self._episode_numbers),
        }
        self._record()
        return observation, info

    def step(self, action: str) -> StepResult:
        result = self.base.step(action)
        info = result[4]
        if info.get("action_valid", True):
            self._path.append(str(action))
            self._record()
        return result

    def gold_actions(self) -> list[str]:
        return self.base.gold_actions()

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        return self.base.seeds(split, count, offset)

    def restart(self) -> None:
        self.base.restart()

    def close(self) -> None:
        self.base.close()


def recording_factory(base_factory: Callable, records: list[dict], source: str) -> Callable:
    """An ``env_factory`` whose environments record their states into ``records`` (episode
    numbers are unique across the environments it builds)."""
    episode_numbers = itertools.count(1)

    def build(spec: EnvironmentSpec, reward=None) -> FactRecordingEnvironment:
        base = base_factory(spec) if reward is None else base_factory(spec, reward)
        return FactRecordingEnvironment(base, records, source, episode_numbers)

    return build


def explore_states(
    tasks: Sequence[TaskRef],
    base_factory: Callable,
    *,
    random_episodes: int,
    policy: Policy | None = None,
    policy_episodes: int = 0,
    rollout: RolloutConfig | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Play random-valid-action and policy episodes on ``tasks``; return every reached state.

    Args:
        tasks: The tasks to explore (environment spec, fold, seed).
        base_factory: Builds the real environments (``hindsight.envs.make_env``).
        random_episodes: Random-agent episodes per task.
        policy: The policy for policy rollouts (None: random only).
        policy_episodes: Policy episodes per task.
        rollout: Decoding and prompt of the policy rollouts (its group size is replaced).
        seed: Seed of the random agent and the policy's sampling.

    Returns:
        The state table (``STATE_COLUMNS``), one row per reached state.
    """
    records: list[dict] = []
    if random_episodes > 0:
        run_random_agent(recording_factory(base_factory, records, "random"), tasks, group_size=random_episodes, seed=seed)
    if policy is not None and policy_episodes > 0:
        settings = dataclasses.replace(rollout or RolloutConfig(), group_size=policy_episodes, seed=seed)
        run_rollouts(policy, recording_factory(base_factory, records, "policy"), tasks, settings, source="exploration")
    table = pd.DataFrame(records, columns=STATE_COLUMNS)
    logger.info("Exploration: %d states reached in %d episodes.", len(table), table.groupby(["source", "episode"]).ngroups if len(table) else 0)
    return table

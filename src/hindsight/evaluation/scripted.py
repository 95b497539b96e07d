"""Scripted reference agents of held-out evaluation: strategies a benchmark must hold down.

An environment family may ship scripted agents that act only on the observations (an
outside agent's view) and try to win without diagnosing anything
(``SCRIPTED_AGENT_FAMILIES``: the dual-control domain's ``exploits.EXPLOITS``). The
evaluation plays each on the same held-out tasks as the trained agents, as agent
``exploit-<name>``, ``play.trials_per_task`` times, through the same adapter
(``gold_floor.with_gold_reference`` adds them beside the gold agent): the report shows what
such a script scores next to the random floor and the gold solver.
"""

from __future__ import annotations

from typing import Any, Callable

from hindsight.data.rows import EpisodeFields, trajectory_row
from hindsight.data.schema import make_group_id
from hindsight.envs.base import EnvironmentSpec, TextEnvironment

EXPLOIT_PREFIX = "exploit-"
SCRIPTED_SOURCE = "scripted"


def _dual_control_exploits() -> dict[str, Callable[[], Any]]:
    from hindsight.envs.dual_control.exploits import EXPLOITS

    return dict(EXPLOITS)


SCRIPTED_AGENT_FAMILIES: dict[str, Callable[[], dict[str, Callable[[], Any]]]] = {"dual_control": _dual_control_exploits}
"""Environment family -> () -> {name: a factory of a fresh agent with ``act(observation) -> action``}."""


def scripted_agents(env: str) -> dict[str, Callable[[], Any]]:
    """The scripted agents of environment family ``env`` (empty where it has none)."""
    reader = SCRIPTED_AGENT_FAMILIES.get(env)
    return reader() if reader else {}


def play_scripted_episode(
    env: TextEnvironment, spec: EnvironmentSpec, split: str, seed: int, agent: Any, name: str
) -> list[dict[str, Any]]:
    """Play ``agent`` (``act(observation) -> action``) on task (``split``, ``seed``) until the
    episode ends; return its trajectory rows (``source`` "scripted", episode id
    ``<group id>/<name>``)."""
    observation, info = env.reset(seed, split)
    group_id = make_group_id(spec.env, spec.game, split, seed)
    episode = EpisodeFields(
        episode_id=f"{group_id}/{name}", group_id=group_id, env=spec.env, task_type=info["task_type"], task=info["task"],
        split=split, seed=int(seed), source=SCRIPTED_SOURCE, policy_version=-1,
    )
    rows: list[dict[str, Any]] = []
    done = False
    while not done:
        action = str(agent.act(observation))
        acted_on, acted_info = observation, info
        observation, reward, terminated, truncated, info = env.step(action)
        done = bool(terminated or truncated)
        rows.append(
            trajectory_row(
                episode, step=len(rows), observation=acted_on, anchor_observation=acted_info["anchor_observation"],
                valid_actions=acted_info["valid_actions"], action=action, response=action, reward=reward,
                score=info["score"], done=done, won=bool(info["won"]) and bool(terminated), action_valid=info["action_valid"],
            )
        )
    return rows

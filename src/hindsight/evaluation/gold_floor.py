"""The gold reference of held-out evaluation: the environment's gold solver on the same tasks.

Beside the random-valid-action floor, an environment whose gold solver is part of the task
(``GOLD_REFERENCE_FAMILIES``: the dual-control domain, where the solver acts only on what
the conversation has shown, and MiniWoB++, whose solvers read only the page the agent sees) is also played by agent ``gold`` on the same held-out tasks,
``play.trials_per_task`` times each, through the same adapter: the report then shows, per
intent and persona, what a perfect agent scores under the same checks (pass^k 1.0 when the
domain is sound) next to the random floor and the trained agents. Other families play no
gold agent (their gold paths read the simulator's internals).

A family with scripted reference agents (``scripted.SCRIPTED_AGENT_FAMILIES``: the
dual-control domain's exploit strategies) also plays each of them on the same tasks, as
agent ``exploit-<name>``, the same number of trials: what a script that never diagnoses
scores under the same checks. The gold agent reads the project environment's
``gold_actions()`` (the expert collection's interface; the dual-control domain's Gymnasium
id refuses it to an outside agent, and its ``info`` holds no gold, fault, intent or dense
score); the scripted agents read only the observations.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import pandas as pd

from hindsight.data.expert import play_gold_episode
from hindsight.envs.base import EnvironmentSpec
from hindsight.evaluation.heldout import HeldoutConfig, heldout_tasks
from hindsight.rollout.tasks import spec_key
from hindsight.evaluation.scripted import EXPLOIT_PREFIX, play_scripted_episode, scripted_agents

GOLD_REFERENCE_FAMILIES: tuple[str, ...] = ("dual_control", "miniwob")
"""Environment families whose evaluation adds the gold agent."""
GOLD_AGENT = "gold"


def gold_reference_episodes(
    specs: Sequence[EnvironmentSpec], env_factory: Callable, config: HeldoutConfig
) -> pd.DataFrame:
    """The gold agent's held-out episodes (empty when no spec's family has one).

    Returns:
        Step rows (the trajectory table's columns) with ``agent`` "gold", ``eval_split`` and
        ``trial``, as ``heldout.evaluate_agents`` labels its agents.
    """
    chosen = [spec for spec in specs if spec.env in GOLD_REFERENCE_FAMILIES]
    config = dataclasses.replace(
        config, unseen_type_specs=[spec for spec in config.unseen_type_specs if spec.env in GOLD_REFERENCE_FAMILIES]
    )
    rows: list[dict] = []
    envs: dict[str, object] = {}  # one environment per task type (spec), for all its tasks
    try:
        for split, tasks in heldout_tasks(chosen, config).items() if chosen else ():
            for task in tasks:
                key = spec_key(task.spec)
                if key not in envs:
                    envs[key] = env_factory(task.spec)
                env = envs[key]
                for trial in range(config.play.trials_per_task):
                    rows += [
                        {**row, "agent": GOLD_AGENT, "eval_split": split, "trial": trial,
                         "episode_id": f"{GOLD_AGENT}:{row['episode_id']}/t{trial}"}
                        for row in play_gold_episode(env, task.spec, task.split, task.seed)
                    ]
    finally:
        for env in envs.values():
            env.close()
    return pd.DataFrame(rows)


def scripted_reference_episodes(
    specs: Sequence[EnvironmentSpec], env_factory: Callable, config: HeldoutConfig
) -> pd.DataFrame:
    """Every scripted agent's held-out episodes (``scripted``; empty when no spec's family
    has one), labelled like the gold agent's (agent ``exploit-<name>``)."""
    chosen = [spec for spec in specs if scripted_agents(spec.env)]
    config = dataclasses.replace(
        config, unseen_type_specs=[spec for spec in config.unseen_type_specs if scripted_agents(spec.env)]
    )
    rows: list[dict] = []
    for split, tasks in heldout_tasks(chosen, config).items() if chosen else ():
        for task in tasks:
            env = env_factory(task.spec)
            try:
                for name, factory in scripted_agents(task.spec.env).items():
                    agent = EXPLOIT_PREFIX + name
                    for trial in range(config.play.trials_per_task):
                        rows += [
                            {**row, "agent": agent, "eval_split": split, "trial": trial,
                             "episode_id": f"{agent}:{row['episode_id']}/t{trial}"}
                            for row in play_scripted_episode(env, task.spec, task.split, task.seed, factory(), name)
                        ]
            finally:
                env.close()
    return pd.DataFrame(rows)


def with_gold_reference(
    episodes: pd.DataFrame, specs: Sequence[EnvironmentSpec], env_factory: Callable, config: HeldoutConfig
) -> pd.DataFrame:
    """``episodes`` with the gold agent's and the scripted agents' episodes appended (their
    ``attrs`` kept)."""
    references = [table for table in (gold_reference_episodes(specs, env_factory, config),
                                      scripted_reference_episodes(specs, env_factory, config)) if not table.empty]
    if not references:
        return episodes
    combined = pd.concat([episodes, *references], ignore_index=True)
    combined.attrs = dict(episodes.attrs)
    return combined

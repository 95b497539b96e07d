"""The random-valid-action agent: the floor every evaluation is compared with.

At every step it plays one of the listed valid actions uniformly at random (seeded), on the
same environments, tasks and step limit as the policy's rollouts, records the reward the
environment gives (as they do), and writes the same table (``Episode`` rows;
``response == action``, ``response_logprobs`` empty, ``policy_version = -1``). Episodes run
one after another: there is no model to batch. An episode whose environment crashes or hangs
is replayed from its start on a restarted environment, as in the engine (``replay``).
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any, Sequence

import pandas as pd

from hindsight.envs.base import EnvironmentCrashedError
from hindsight.policy.prompts import PromptConfig
from hindsight.rollout.engine import RolloutResult
from hindsight.rollout.env_pool import EnvFactory, EnvPool
from hindsight.rollout.config import RolloutConfig
from hindsight.rollout.faults import RolloutFaults
from hindsight.rollout.replay import Replays, restart_env, start_episode
from hindsight.rollout.live_episode import TABLE_COLUMNS, Episode
from hindsight.rollout.stats import FAULTS_ATTR, rollout_stats
from hindsight.rollout.tasks import as_task_refs

logger = logging.getLogger(__name__)

RANDOM_AGENT_VERSION = -1


def run_random_agent(
    env_factory: EnvFactory,
    tasks: Sequence[Any],
    *,
    group_size: int = 1,
    max_steps: int | None = None,
    prompt: PromptConfig | None = None,
    seed: int = 0,
    source: str = "rollout",
    episode_replays: int = RolloutConfig.episode_replays,
) -> RolloutResult:
    """Play ``group_size`` random-valid-action episodes per task.

    Args:
        env_factory: Builds an environment for a spec (e.g. ``hindsight.envs.make_env``);
            the environment's ``RewardConfig`` decides the rewards.
        tasks: Task references (``TaskRef`` or ``(spec, seed, split)``).
        group_size: Episodes per task.
        max_steps: Step limit (None: each task spec's ``max_steps``).
        prompt: Prompt settings (only the pinned facts depend on it; no prompt is read).
        seed: Seed of the action choices.
        source: The table's ``source`` value.
        episode_replays: Replays of an episode whose environment failed under it.

    Returns:
        A ``RolloutResult`` with the table, no samples, the stats and the failed episodes.

    Raises:
        EnvironmentCrashedError: The environment keeps failing (``replay``), or every
            episode failed.
    """
    prompt = prompt or PromptConfig()
    chooser = random.Random(seed)
    task_refs = as_task_refs(tasks)
    faults = RolloutFaults(planned=len(task_refs) * group_size)
    replays = Replays(faults, episode_replays)
    rows: list[dict] = []
    started = time.perf_counter()
    with EnvPool(env_factory, max_size=1) as pool:
        for task in task_refs:
            limit = max_steps if max_steps is not None else task.spec.max_steps
            for member in range(group_size):
                episode_id = f"random/{task.group_id}/r{seed}/{member}"

                def build(env, episode_id=episode_id, task=task, limit=limit) -> Episode:
                    return Episode(episode_id=episode_id, task=task, env=env, max_steps=int(limit), prompt_config=prompt)

                episode = _play_random(pool, task, episode_id, build, chooser, source, replays)
                if episode is not None:
                    rows.extend(episode.rows)
    faults.check_some_finished(len({row["episode_id"] for row in rows}))
    wall = time.perf_counter() - started
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    table.attrs[FAULTS_ATTR] = faults.metrics()
    stats = rollout_stats(table)
    stats.update(faults.stats())
    stats.update(wall_seconds=wall, env_steps_per_s=len(table) / wall if wall > 0 else 0.0)
    logger.info("Random agent: %d episodes, success %.3f.", stats["episodes"], stats["success_rate"])
    return RolloutResult(table=table, samples=[], stats=stats, faults=faults)


def _play_random(pool, task, episode_id, build, chooser, source, replays: Replays) -> Episode | None:
    """Play an episode to its end, from its start again while its environment fails under it
    and ``replays`` allows (None: given up)."""
    while True:
        try:
            episode = start_episode(pool, task, episode_id, build, replays.faults)
        except EnvironmentCrashedError as error:
            if not replays.failed_try(task, episode_id, 0, error):
                return None
            continue
        try:
            while not episode.done:
                valid = episode.valid_actions
                action = chooser.choice(valid) if valid else "look"
                episode.play(action, action, source=source, policy_version=RANDOM_AGENT_VERSION)
            return episode
        except EnvironmentCrashedError as error:
            restart_env(pool, episode.env, replays.faults)
            if not replays.failed_try(task, episode_id, episode.step, error):
                return None
        finally:
            pool.release(episode.env)  # a no-op after restart_env gave it back

"""The State2State stage as library calls: explore the training games, and RL on the goal
tasks from a starting policy with the project's RL loop (``training.rl.train_rl``, unchanged:
the goal environments come in through its ``env_factory``)."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from typing import Callable

import pandas as pd

from hindsight.config import ProjectConfig, State2StateConfig
from hindsight.envs import make_env
from hindsight.params import as_dict
from hindsight.rollout.tasks import split_tasks
from hindsight.state2state.exploration import explore_states
from hindsight.state2state.goal_env import GoalEnvironmentFactory, goal_task_refs
from hindsight.state2state.task_set import check_task_set
from hindsight.training.rl import RLRunResult, train_rl
from hindsight.training.rl_run import checkpoint_directory, frozen_copy, heldout_evaluator

logger = logging.getLogger(__name__)


def explore_training_games(policy, project: ProjectConfig, settings: State2StateConfig) -> pd.DataFrame:
    """Reached states of the first ``settings.tasks_per_game`` train seeds of every game,
    by the random agent and by ``policy`` (``exploration.explore_states``).

    Raises:
        ValueError: The explored seeds reach the held-out "seen" seeds.
    """
    offset = project.environment.seen_seed_offset
    if settings.tasks_per_game > offset:
        raise ValueError(
            f"state2state.tasks_per_game={settings.tasks_per_game} reaches environment.seen_seed_offset={offset}: "
            "held-out 'seen' tasks must never be explored"
        )
    tasks = [task for spec in project.specs() for task in split_tasks(spec, "train", settings.tasks_per_game)]
    return explore_states(
        tasks, make_env,
        random_episodes=settings.random_episodes,
        policy=policy if settings.policy_episodes else None,
        policy_episodes=settings.policy_episodes,
        rollout=project.rollout_config(),
        seed=project.seeds.rollouts,
    )


def task_set_fingerprint(tasks: pd.DataFrame) -> str:
    """A short hash of a task table's content (part of the checkpoint fingerprint)."""
    blob = json.dumps(tasks.to_dict("records"), sort_keys=True, default=lambda value: list(value))
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def train_on_goal_tasks(
    start_policy,
    tasks: pd.DataFrame,
    project: ProjectConfig,
    settings: State2StateConfig,
    log_metrics: Callable[[dict, int], None] | None = None,
) -> RLRunResult:
    """RL (``settings.rl``) on the goal tasks from a private copy of ``start_policy`` (also
    the frozen KL reference), evaluated on the real held-out tasks every ``rl.eval_every``
    updates; checkpoints resume as in the training stage."""
    check_task_set(tasks)
    specs = project.specs()
    refs = goal_task_refs(tasks, specs)
    rollout = project.rollout_config()
    fingerprint = {"project": as_dict(project), "state2state": as_dict(settings), "tasks": task_set_fingerprint(tasks)}
    checkpoints = checkpoint_directory(settings.checkpoint_root, fingerprint, start_policy.model)
    logger.info("State2State: %d goal tasks, RL (%s) checkpoints in %s", len(refs), settings.rl.algorithm, checkpoints)
    policy = copy.deepcopy(start_policy)
    return train_rl(
        policy, frozen_copy(start_policy.model), refs, GoalEnvironmentFactory(tasks), rollout, settings.rl,
        seed=project.seeds.rollouts,
        checkpoint_dir=checkpoints,
        evaluate=heldout_evaluator(specs, rollout, project.heldout_config(settings.heldout)),
        log_metrics=log_metrics,
    )

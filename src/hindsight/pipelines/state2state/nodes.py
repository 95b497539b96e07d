"""Nodes of the State2State stage: thin calls into ``hindsight.state2state``."""

from __future__ import annotations

import logging

import pandas as pd

from hindsight import tracking
from hindsight.config import ProjectConfig, State2StateConfig
from hindsight.params import as_dict
from hindsight.policy import Policy
from hindsight.state2state.stage import explore_training_games, train_on_goal_tasks
from hindsight.state2state.task_set import build_task_set, check_task_set

logger = logging.getLogger(__name__)

METRIC_PREFIX = "state2state/"
"""The stage's MLflow metrics (its RL loop's ``rollout/...``, ``losses/...``, ``eval/...``
under it), apart from the training stage's in a run that has both."""


def explore_reached_states(base_policy: Policy, project: ProjectConfig, state2state: State2StateConfig) -> pd.DataFrame:
    """Every state the random agent and the base policy reach on the explored train seeds.

    Returns:
        The state table (``hindsight.state2state.exploration.STATE_COLUMNS``).
    """
    states = explore_training_games(
        base_policy, project.specs(), project.rollout_config(),
        tasks_per_game=state2state.tasks_per_game,
        random_episodes=state2state.random_episodes,
        policy_episodes=state2state.policy_episodes,
        seen_seed_offset=project.environment.seen_seed_offset,
        seed=project.seeds.rollouts,
    )
    distinct = states.groupby(["env", "game", "params", "seed"])["facts"].apply(lambda facts: len({tuple(f) for f in facts}))
    tracking.log_metrics({
        f"{METRIC_PREFIX}explore/states": float(len(states)),
        f"{METRIC_PREFIX}explore/distinct_states": float(distinct.sum()),
        f"{METRIC_PREFIX}explore/policy_state_share": float((states["source"] == "policy").mean()),
    })
    return states


def make_goal_tasks(reached_states: pd.DataFrame, project: ProjectConfig, state2state: State2StateConfig) -> pd.DataFrame:
    """The goal task set "reach a state where <facts>" (``hindsight.state2state.task_set``)."""
    tasks = build_task_set(
        reached_states, facts_per_goal=state2state.facts_per_goal, max_tasks=state2state.max_tasks, seed=project.seeds.rollouts
    )
    check_task_set(tasks)
    tracking.log_metrics({
        f"{METRIC_PREFIX}tasks/count": float(len(tasks)),
        f"{METRIC_PREFIX}tasks/goal_facts_mean": float(tasks["goal"].map(len).mean()),
        f"{METRIC_PREFIX}tasks/path_length_mean": float(tasks["path_length"].mean()),
        f"{METRIC_PREFIX}tasks/policy_share": float((tasks["source"] == "policy").mean()),
    })
    logger.info("State2State: %d goal tasks from %d reached states", len(tasks), len(reached_states))
    return tasks


def train_on_state2state(base_policy: Policy, state2state_tasks: pd.DataFrame, project: ProjectConfig, state2state: State2StateConfig):
    """RL on the goal tasks from the base policy.

    Returns:
        (the State2State checkpoint, its per-update history).
    """
    result = train_on_goal_tasks(
        base_policy, state2state_tasks, project.specs(), project.rollout_config(), state2state.rl,
        heldout=project.heldout_config(state2state.heldout),
        seed=project.seeds.rollouts,
        checkpoint_root=state2state.checkpoint_root,
        settings_fingerprint={"project": as_dict(project), "state2state": as_dict(state2state)},
        log_metrics=lambda metrics, step: tracking.log_metrics({METRIC_PREFIX + k: v for k, v in metrics.items()}, step=step),
    )
    result.policy.version = state2state.rl.updates
    return result.policy, result.history

"""Nodes of the world-model stage around the start policy's own episodes: playing them on
the real environment (``world_model_policy_episodes``) and calibrating the trained world
model's judgement on the held-out ones (``world_model.calibration``: ``world_model_endings``,
``world_model_calibration``, MLflow ``world_model/calibration/*`` and ``world_model/imagined_*``)."""

from __future__ import annotations

import dataclasses
import logging

import pandas as pd

from hindsight import tracking
from hindsight.config import ProjectConfig, WorldModelConfig
from hindsight.envs import make_env
from hindsight.policy import Policy
from hindsight.policy.generation import generate_text
from hindsight.rollout.engine import run_rollouts
from hindsight.rollout.live_episode import TABLE_COLUMNS
from hindsight.rollout.tasks import split_tasks
from hindsight.evaluation.world_model_judgement import (
    calibration_metrics,
    calibration_summary,
    imagination_summary,
    imagined_tasks,
    judged_endings,
    judging_tokens,
)
from hindsight.world_model.environment import WorldModelSimulator
from hindsight.rollout.policy_episodes import heldout_episodes, play_policy_episodes

logger = logging.getLogger(__name__)


def world_model_start_policy(stage1_policy: Policy, base_policy: Policy, settings: WorldModelConfig) -> Policy:
    """The checkpoint whose own episodes the world model learns from and is calibrated on
    (``world_model.policy_episodes.start_from``)."""
    return {"stage1": stage1_policy, "base": base_policy}[settings.policy_episodes.start_from]


def play_policy_for_world_model(policy: Policy, project: ProjectConfig, settings: WorldModelConfig) -> pd.DataFrame:
    """The start policy plays the first ``policy_episodes.tasks_per_game`` train-fold tasks
    of every game ``episodes_per_task`` times on the real environment (the rollout engine):
    a trajectory table whose episode ids begin ``policy/`` (``rollout.policy_episodes``), empty
    when ``tasks_per_game`` is 0."""
    episodes = settings.policy_episodes
    if not episodes.tasks_per_game:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    tasks = [task for spec in project.specs() for task in split_tasks(spec, "train", episodes.tasks_per_game)]
    config = project.rollout_config(group_size=episodes.episodes_per_task, sampling=episodes.sampling)
    table, stats = play_policy_episodes(policy, make_env, tasks, config)
    tracking.log_metrics({"world_model/policy_episodes": float(stats["episodes"]), "world_model/policy_success_rate": float(stats["success_rate"])})
    logger.info("World model: the %s policy played %d real episodes (success %.3f)", episodes.start_from, stats["episodes"], stats["success_rate"])
    return table


def judge_heldout_endings(world_model: Policy, policy_episodes: pd.DataFrame, project: ProjectConfig, settings: WorldModelConfig) -> pd.DataFrame:
    """The world model's judged ending of every held-out policy episode, teacher-forced
    (``evaluation.world_model_judgement.judged_endings``)."""
    heldout = heldout_episodes(policy_episodes, settings.heldout_fraction)
    query = settings.query_settings()
    budget = min(query.max_new_tokens, judging_tokens(world_model.tokenizer))

    def predict(prompts: list[str]) -> list[str]:
        return generate_text(world_model, prompts, max_new_tokens=budget, stop_at_newline=True, max_length=query.max_length)

    endings = judged_endings(heldout, predict, history=query.history, max_chars=query.max_observation_chars, max_steps=project.environment.max_steps)
    logger.info("World model: %d held-out policy episodes judged", len(endings))
    return endings


def imagine_heldout_starts(
    simulator: WorldModelSimulator, policy: Policy, policy_episodes: pd.DataFrame, project: ProjectConfig, settings: WorldModelConfig
) -> pd.DataFrame:
    """The world model drives ``calibration.imagined_episodes_per_task`` episodes with the
    start policy from each drawn held-out task's start (no imagined turns; the policy
    decodes as its real episodes did): the rollout table (``source: world_model``)."""
    calibration = settings.calibration
    heldout = heldout_episodes(policy_episodes, settings.heldout_fraction)
    tasks = imagined_tasks(heldout, project.specs(), calibration.imagined_tasks, seed=project.seeds.evaluation)
    if not tasks:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    config = project.rollout_config(group_size=calibration.imagined_episodes_per_task, sampling=settings.policy_episodes.sampling)
    calls = simulator.calls
    result = run_rollouts(policy, simulator.make_env, tasks, dataclasses.replace(config, progress=False), policy_version=policy.version, source="world_model")
    logger.info("World model: %d imagined episodes from %d held-out starts (%d world-model calls)", result.stats["episodes"], len(tasks), simulator.calls - calls)
    return result.table


def report_calibration(endings: pd.DataFrame, imagined: pd.DataFrame, policy_episodes: pd.DataFrame) -> pd.DataFrame:
    """The calibration table (judged endings by real ending, then the imagined won share by
    task type next to the real success rate) and its MLflow metrics."""
    summary = calibration_summary(endings)
    imagination = imagination_summary(imagined, policy_episodes)
    metrics = calibration_metrics(summary, imagination)
    tracking.log_metrics(metrics)
    logger.info("World model calibration: %s", {key: round(value, 3) for key, value in metrics.items()})
    table = pd.concat([summary.assign(part="endings"), imagination.assign(part="imagination")], ignore_index=True)
    return table[["part"] + [column for column in table.columns if column != "part"]]

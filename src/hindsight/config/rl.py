"""The RL setup of a run from the project's settings: the environment's games, the rollout
and held-out settings, the training-task pool and the analyzer (``methods.run.RLSetup``)."""

from __future__ import annotations

import logging

from hindsight.config.project import ProjectConfig
from hindsight.config.stages import HeldoutPlay, TrainingConfig
from hindsight.methods.run import RLSetup
from hindsight.rollout.tasks import split_tasks

logger = logging.getLogger(__name__)


def rl_setup(project: ProjectConfig, training: TrainingConfig, heldout: HeldoutPlay | None = None) -> RLSetup:
    """Environment specs, rollout and held-out settings and the training-task pool (the
    first ``training.tasks_per_game`` train-fold seeds of each game), checking that the
    held-out "seen" tasks were never trained on."""
    specs = project.specs()
    pool = [task for spec in specs for task in split_tasks(spec, "train", training.tasks_per_game)]
    if project.rollout.temperature != 1.0:
        logger.warning(
            "RL rollouts are sampled at T=%s but every log-prob is taken at T=1: the PPO ratio and the "
            "distillation target are off-policy (set rollout.temperature: 1.0)", project.rollout.temperature,
        )
    offset = project.environment.seen_seed_offset
    play = heldout or training.heldout
    if "seen" in play.splits and offset < training.tasks_per_game:
        raise ValueError(
            f"environment.seen_seed_offset={offset} overlaps the {training.tasks_per_game} training tasks per game "
            "(training.tasks_per_game): held-out 'seen' tasks must never be trained on"
        )
    return RLSetup(specs=specs, rollout=project.rollout_config(), heldout=project.heldout_config(play), pool=pool, analyzer=project.analyzer)


"""The RL setup of a run from the project's settings: the environment's games, the rollout
and held-out settings, the training-task pool and the analyzer (``training.run_setup.RLSetup``)."""

from __future__ import annotations

import logging

from hindsight.config.project import ProjectConfig
from hindsight.config.stages import HeldoutPlay, TrainingConfig
from hindsight.training.run_setup import RLSetup
from hindsight.envs.base import EnvironmentConfigError
from hindsight.policy.logprobs import LOGPROB_TEMPERATURE
from hindsight.rollout.tasks import seen_offset, split_tasks

logger = logging.getLogger(__name__)


def rl_setup(project: ProjectConfig, training: TrainingConfig, heldout: HeldoutPlay | None = None) -> RLSetup:
    """Environment specs, rollout and held-out settings and the training-task pool (the
    first ``training.tasks_per_game`` train-fold seeds of each game), checking that the
    held-out "seen" tasks were never trained on."""
    specs = project.specs()
    try:
        pool = [task for spec in specs for task in split_tasks(spec, "train", training.tasks_per_game)]
    except EnvironmentConfigError as error:
        raise EnvironmentConfigError(f"{error} The training tasks are the first training.tasks_per_game={training.tasks_per_game} of each game's train fold: lower it.") from error
    temperature = project.rollout.sampling.temperature
    if temperature != LOGPROB_TEMPERATURE:
        logger.warning(
            "RL rollouts are sampled at T=%s but every log-prob is taken at T=%s: the PPO ratio and the "
            "distillation target are off-policy (set rollout.sampling.temperature: %s)", temperature,
            LOGPROB_TEMPERATURE, LOGPROB_TEMPERATURE,
        )
    configured = project.environment.seen_seed_offset
    play = heldout or training.heldout
    for spec in specs if "seen" in play.splits else []:
        offset = seen_offset(spec, configured)
        if offset < training.tasks_per_game:
            where = f"environment.seen_seed_offset={configured}" if configured is not None else f"the held-out 'seen' offset of {spec.game!r} ({offset}: half its train fold)"
            raise ValueError(
                f"{where} overlaps the {training.tasks_per_game} training tasks per game (training.tasks_per_game): "
                "held-out 'seen' tasks must never be trained on; lower training.tasks_per_game or set environment.seen_seed_offset"
            )
    return RLSetup(specs=specs, rollout=project.rollout_config(), heldout=project.heldout_config(play), pool=pool, analyzer=project.analyzer)


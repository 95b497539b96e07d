"""What every RL run of a pipeline shares (``RLSetup``): the games, how episodes are played,
the held-out evaluation, the task pool, the analyzer and the training environments' factory,
built once from the settings (``hindsight.config.rl_setup``) and read by ``runs.rl_run.run_rl``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hindsight.envs.base import EnvironmentSpec
from hindsight.evaluation.heldout import HeldoutConfig
from hindsight.rollout.engine import RolloutConfig
from hindsight.rollout.tasks import TaskRef


@dataclass
class RLSetup:
    """What every RL run of a pipeline shares, built once from the settings."""

    specs: list[EnvironmentSpec]
    """The environment's games."""
    rollout: RolloutConfig
    """How training episodes are played (group size and seed are set per update)."""
    heldout: HeldoutConfig
    """Held-out evaluation during training."""
    pool: list[TaskRef]
    """The training tasks."""
    analyzer: Any = None
    """How the policy writes its skills (``skills.AnalyzerConfig``, a layer above; SEED,
    OPID): handed to the method (``training.method.MethodContext``)."""
    env_factory: Callable | None = None
    """Builds the training environments of ``pool`` (None: ``envs.make_env``; EMPO: expert
    replay, ``runs.empo_run.empo_grid_setup``). Held-out evaluation always plays the
    real environment (``specs``)."""

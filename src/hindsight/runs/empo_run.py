"""One EMPO run with no live environment: the ingested expert trajectories are the
transition source (``envs.expert_replay``), the core loop with the EMPO method
(``methods.empo``) trains, and semi-online success on held-out trajectories is the
evaluation (``evaluation.semi_online``), before training (update 0), every
``rl.eval_every`` updates and after the last. Its settings are ``hindsight.config.EmpoConfig``
(``parameters_empo.yml``), read through ``EmpoSettings``."""

from __future__ import annotations

import copy
import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import pandas as pd

from hindsight.data.expert import play_gold_episode
from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentConfigError
from hindsight.envs.expert_replay import ReplaySet, expert_trajectories, replay_env_factory
from hindsight.evaluation.semi_online import evaluate_semi_online
from hindsight.rollout.engine import RolloutConfig
from hindsight.rollout.tasks import TaskRef, make_tasks, spec_key
from hindsight.methods.registry import build_method
from hindsight.training.run_setup import RLSetup
from hindsight.training.checkpoint import frozen_copy
from hindsight.training.loop import RLRunResult, train_rl
from hindsight.training.rl_config import RLConfig

logger = logging.getLogger(__name__)


class EmpoSettings(Protocol):
    """What an EMPO run reads of its settings: the fields of ``hindsight.config.EmpoConfig``
    (``parameters_empo.yml``), where each one is documented and has its default. The library
    takes that object as it is and does not import the config layer above it."""

    successful_only: bool
    heldout_fraction: float
    patch_threshold: int
    include_thought: bool
    max_candidates: int
    rl: RLConfig


SEMI_ONLINE_COLUMNS = ["update", "semi_online/success_rate", "semi_online/mean_progress", "semi_online/trajectories"]


@dataclass
class EmpoSource:
    """The replayed trajectories, split into training and held-out folds, and how they play."""

    replay: ReplaySet
    empo: EmpoSettings

    @classmethod
    def from_table(cls, trajectories: pd.DataFrame, empo: EmpoSettings, seed: int) -> "EmpoSource":
        """The ``source == "expert"`` episodes of an ingested trajectory table (environment
        gold episodes and external files alike), held-out share split off with ``seed``."""
        expert_rows = trajectories[trajectories["source"] == "expert"]
        found = expert_trajectories(expert_rows, successful_only=empo.successful_only, max_candidates=empo.max_candidates)
        replay = ReplaySet.split_off(found, empo.heldout_fraction, seed)
        if not replay.by_split["train"]:
            raise EnvironmentConfigError(
                f"EMPO: none of the {len(found)} expert trajectories is in the train fold (field 'split'); "
                "nothing to train on"
            )
        logger.info(
            "EMPO: %d expert trajectories (%d to train on, %d held out for semi-online evaluation)",
            len(found), len(replay.by_split["train"]), len(replay.by_split["test"]),
        )
        return cls(replay=replay, empo=empo)

    def env_factory(self) -> Callable:
        """``spec -> ExpertReplayEnvironment`` with the run's patching."""
        return replay_env_factory(self.replay, patch_threshold=self.empo.patch_threshold, include_thought=self.empo.include_thought)

    def train_tasks(self):
        """One task per training trajectory."""
        return make_tasks(self.replay.spec(), "train", range(len(self.replay.by_split["train"])))


def semi_online_table(history: pd.DataFrame) -> pd.DataFrame:
    """The semi-online evaluations of a run's history (one row per evaluated update)."""
    if "semi_online/success_rate" not in history:
        return pd.DataFrame({name: pd.Series([], dtype="float64") for name in SEMI_ONLINE_COLUMNS})
    rows = history.dropna(subset=["semi_online/success_rate"])
    return rows[SEMI_ONLINE_COLUMNS].astype("float64").reset_index(drop=True)


def run_empo(
    start_policy,
    source: EmpoSource,
    rollout: RolloutConfig,
    checkpoint_dir: str | Path | None,
    *,
    seed: int,
    log_metrics: Callable[[dict, int], None] | None = None,
) -> RLRunResult:
    """Train a private copy of ``start_policy`` with EMPO on ``source``.

    Args:
        start_policy: The starting checkpoint; also the frozen KL reference.
        source: The replayed expert trajectories and the EMPO settings.
        rollout: Decoding and prompt settings (group size and seed are set per update).
        checkpoint_dir: Checkpoints (resumed when present).
        seed: Task draws, rollouts and mini-batch order.
        log_metrics: ``(metrics, step)`` sink (MLflow).

    Returns:
        ``RLRunResult`` whose history starts with the semi-online evaluation at update 0.
    """
    policy = copy.deepcopy(start_policy)
    reference = frozen_copy(start_policy.model)

    def evaluate(model_policy, update: int) -> dict[str, float]:
        return evaluate_semi_online(model_policy, source.replay, rollout, split="test")

    start = evaluate(policy, 0)
    if log_metrics:
        log_metrics(start, 0)
    result = train_rl(
        policy, reference, source.train_tasks(), source.env_factory(), rollout, source.empo.rl, build_method(source.empo.rl),
        seed=seed, checkpoint_dir=checkpoint_dir, evaluate=evaluate, log_metrics=log_metrics,
    )
    first = {"update": 0, "charts/env_steps_total": 0.0, **start}
    result.history = pd.concat([pd.DataFrame([first]), result.history], ignore_index=True)
    return result


def gold_trajectories(tasks: Sequence[TaskRef]) -> pd.DataFrame:
    """The gold (expert) episodes of ``tasks``, played once on the real environment: the
    same episodes ingestion records for those tasks."""
    rows, envs = [], {}
    try:
        for task in tasks:
            key = spec_key(task.spec)
            if key not in envs:
                envs[key] = make_env(task.spec)
            rows.extend(play_gold_episode(envs[key], task.spec, task.split, task.seed))
    finally:
        for env in envs.values():
            env.close()
    return pd.DataFrame(rows)


def empo_grid_setup(setup: RLSetup, empo: EmpoSettings, seed: int) -> tuple[RLSetup, int]:
    """The RL setup of an EMPO cell of the experiment grid: the gold episodes of the grid's
    training tasks are replayed as its environment (every one trains: held-out evaluation
    is online, on ``setup.specs``); the other methods train on those tasks online.

    Returns:
        (the setup, the environment steps the gold episodes took to record).
    """
    table = gold_trajectories(setup.pool)
    replay = ReplaySet.split_off(
        expert_trajectories(table, successful_only=empo.successful_only, max_candidates=empo.max_candidates), 0.0, seed
    )
    source = EmpoSource(replay=replay, empo=empo)
    return dataclasses.replace(setup, pool=source.train_tasks(), env_factory=source.env_factory()), len(table)

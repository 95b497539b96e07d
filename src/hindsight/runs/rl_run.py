"""One RL run end to end (``run_rl``): the method that ``training.rl.algorithm`` names
(``methods.registry``), a private copy of the starting policy, its frozen KL reference
(``training.checkpoint.frozen_copy``) and the held-out evaluator
(``evaluation.heldout.heldout_evaluator``); then the loop (``training.loop.train_rl``, the
same for every method). ``hindsight.config.rl_setup`` builds the ``RLSetup``
(``training.run_setup``) from the project's settings. The training pipeline runs one; the
experiment grid runs one per cell.

The run ends with its last update's policy, or with ``training.rl.end_policy: best_seen``
the held-out point best on seen tasks (``training.end_selection``).
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from hindsight.envs import make_env
from hindsight.evaluation.heldout import heldout_evaluator
from hindsight.methods.registry import build_method
from hindsight.training.run_setup import RLSetup
from hindsight.policy import Policy
from hindsight.training.checkpoint import frozen_copy
from hindsight.training.data_parallel import DataParallel
from hindsight.training.end_selection import SELECTED_COLUMN, BestSeenKeeper, check_end_policy
from hindsight.training.loop import RLRunResult, train_rl
from hindsight.training.method import MethodContext
from hindsight.training.rl_config import RLConfig

logger = logging.getLogger(__name__)


def run_rl(
    start_policy: Policy,
    config: RLConfig,
    setup: RLSetup,
    checkpoint_dir: str | Path | None,
    *,
    seed: int,
    skill_bank: dict[str, str] | None = None,
    log_metrics: Callable[[dict, int], None] | None = None,
    evaluate_start: bool = False,
    start_metrics: dict[str, float] | None = None,
    parallel: DataParallel | None = None,
    world_model=None,
) -> RLRunResult:
    """Train a private copy of ``start_policy`` (the caller's object is left untouched).

    Args:
        start_policy: The starting checkpoint; also the frozen KL reference.
        config: RL settings.
        setup: Tasks, rollout, held-out and analyzer settings (``rl_setup``).
        checkpoint_dir: Checkpoints (resumed when present).
        seed: The run's seed (task draws, rollouts, mini-batch order).
        skill_bank: Fixed skills (the ablation's teacher).
        world_model: The trained world-model simulator (WM-R1).
        log_metrics: ``(metrics, step)`` sink (MLflow).
        evaluate_start: Also evaluate the starting policy, logged as update 0 (learning curves).
        start_metrics: That evaluation when the caller already has it (the held-out tasks
            and seed are fixed, so it is the same for every run from one checkpoint).
        parallel: One process of a ``torchrun`` learner (``train_rl``).

    Returns:
        ``RLRunResult``; with ``evaluate_start`` the history's first row is update 0.
    """
    method = build_method(config, MethodContext(analyzer=setup.analyzer, skill_bank=skill_bank, world_model=world_model))
    policy = copy.deepcopy(start_policy)
    reference = frozen_copy(start_policy.model)
    evaluate = evaluator = heldout_evaluator(setup.specs, method.rollout_settings(setup.rollout, heldout=True), setup.heldout)
    check_end_policy(config.end_policy, config.eval_every, setup.heldout.play.splits)
    writer = parallel is None or parallel.is_writer  # under torchrun only rank 0 evaluates, so only it picks
    keeper = BestSeenKeeper(checkpoint_dir) if config.end_policy == "best_seen" and writer else None
    if keeper is not None:
        evaluate = _keeping_best(evaluate, keeper)
    if evaluate_start:
        start_metrics = {"update": 0, "charts/env_steps_total": 0.0, **(start_metrics or evaluate(policy, 0))}
        if keeper is not None:
            keeper.observe(policy, 0, start_metrics)  # the start is a candidate too
        if log_metrics:
            log_metrics({k: v for k, v in start_metrics.items() if k != "update"}, 0)
    result = train_rl(
        policy, reference, setup.pool, setup.env_factory or make_env, setup.rollout, config, method,
        seed=seed, checkpoint_dir=checkpoint_dir, evaluate=evaluate, log_metrics=log_metrics, parallel=parallel,
    )
    if evaluate_start:
        result.history = pd.concat([pd.DataFrame([start_metrics]), result.history], ignore_index=True)
    if keeper is not None:
        point = keeper.restore(result.policy)
        result.history[SELECTED_COLUMN] = (result.history["update"] == point.update).astype(float)
        logger.info("RL ends with the policy of update %d (seen held-out score %.3f, best of the points)", point.update, point.seen_score)
        if log_metrics:
            log_metrics({"end/selected_update": float(point.update), "end/selected_seen_score": point.seen_score}, config.updates)
    end_update = point.update if keeper is not None else config.updates
    result.end_outcomes = evaluator.outcomes.get(end_update)
    return result


def _keeping_best(evaluate: Callable[[Any, int], dict[str, float]], keeper: BestSeenKeeper) -> Callable[[Any, int], dict[str, float]]:
    """``evaluate`` that also hands each point to ``keeper`` (``end_policy: best_seen``)."""

    def evaluate_and_keep(policy, update: int) -> dict[str, float]:
        metrics = evaluate(policy, update)
        keeper.observe(policy, update, metrics)
        return metrics

    return evaluate_and_keep

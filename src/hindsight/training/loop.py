"""The RL loop, the same for every method, in the order it runs (``train_rl``): the module to
open first after ``runs.rl_run.run_rl``, which builds the method and calls it.

The loop (``train_rl``) is the same for every method: rollout -> batch -> the method's
signals and advantages -> update -> checkpoint -> evaluation. It names no method: what a
method changes, it changes through its hooks (``training.method.Method``).
One update:
  1. rollout: pi_old plays ``group_size`` episodes on each of ``tasks_per_update`` tasks in
     the method's transition source (the environment, expert replay, a world model), drawn
     uniformly, by STEPO pass-rate calibration or by the curriculum
     (``rollout.curriculum``; ``training.update_batch``); STEPO may drop zero-variance groups
     and refill (``training.stepo``); the curriculum's positive replay swaps in stored successes
     of hard tasks (``training.positive_replay``); the method may then change the batch (WM-R1's replay);
  2. signals: the method fills what its loss needs beyond the recorded log-probs (SEED and
     OPID: the policy writes a skill per finished episode and every sample is re-scored
     with it, ``batch.teacher_logp``);
  3. advantages: the method's, per step sample, the schedule's weights folded in (STEPO);
  4. update: PPO epochs over the schedule's mini-batches (``training.update``), the loss of
     each micro-batch assembled in one function (``training.update.micro_batch_loss_terms``):
     PPO clip (dual clip) + the method's terms (SEED's gated distillation) + the entropy
     bonus + ``kl_coef`` * KL to the reference.
The schedule (``training.schedule``) is chosen once from ``training.rl.schedulers`` as the
loop starts (``start_loop``); the loop asks its pieces and reads none of their settings.
The updated policy is the next update's actor (and, for SEED, its analyzer). With
asynchronous rollouts a rollout worker process plays the rollouts of the next updates while
this one trains, at most ``max_staleness`` versions behind, and the loss is decoupled PPO
(``training.async_rollouts``);
an inexact rollout backend makes it decoupled PPO too (``training.backend_correction``).

Checkpoints hold everything a resumed run needs (model, optimizer, RNG states, update
counter, metric history, the method's own state such as WM-R1's replay buffer); a run restarted
after being killed continues from the last one and, on CPU with the same seeds, ends with
the same metrics (``checkpoint.resume_rl``). The run ends with its last update's policy, or
with ``training.rl.end_policy: best_seen`` the held-out point best on seen tasks
(``training.end_selection``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
import torch

from hindsight.policy import Policy
from hindsight.policy.inference import inference_policy
from hindsight.rollout.engine import RolloutConfig
from hindsight.rollout.pass_rates import PassRates
from hindsight.rollout.stats import rollout_metrics
from hindsight.rollout.tasks import TaskRef, training_task_pool
from hindsight.training.batch import RolloutBatch
from hindsight.training.checkpoint import ResumedRun, resume_rl, save_rl_checkpoint
from hindsight.training.data_parallel import DataParallel
from hindsight.training.method import Method, check_requirements
from hindsight.training.phase_timing import phase_seconds
from hindsight.training.played_labels import action_labeller
from hindsight.training.positive_replay import check_replayable
from hindsight.training.rl_config import RLConfig
from hindsight.training.rl_parallel import gather_update_batch, mean_over_ranks, shard_tasks
from hindsight.training.schedule import Schedule
from hindsight.training.update import update_policy
from hindsight.training.update_batch import collect_update_batch

logger = logging.getLogger(__name__)


@dataclass
class RLRunResult:
    """What one RL run returns: the trained policy and its per-update metric history."""

    policy: Any
    history: pd.DataFrame
    skills: pd.DataFrame
    last_rollout: pd.DataFrame
    end_outcomes: pd.DataFrame | None = None
    """The held-out episodes of the policy the run ended with, one row per task
    (``evaluation.heldout.HeldoutEvaluator.outcomes``); None when this process did not play
    that point (a start evaluated by the caller, a point played before a resume)."""


@dataclass
class LoopState:
    """What the loop carries from update to update (its run, optimizer, RNGs and pass rates
    go into every checkpoint)."""

    run: ResumedRun
    optimizer: torch.optim.Optimizer
    generators: dict[str, torch.Generator]
    rates: PassRates
    """Per-task pass rates (curriculum, STEPO calibration)."""
    schedule: Schedule
    """Which tasks, which groups, how samples weigh, how mini-batches are cut, who plays."""
    pool: list[TaskRef] = field(default_factory=list)


def start_loop(policy: Policy, train_tasks: Sequence[TaskRef], config: RLConfig, seed: int, checkpoint_dir) -> LoopState:
    """The loop's state from its settings: everything seeded, the optimizer, the newest
    checkpoint resumed if any, the schedule (``training.rl.schedulers``) with the per-task
    pass-rate estimates its pieces read (a resumed run's own), and the task pool."""
    torch.manual_seed(seed)
    generators = {"minibatch": torch.Generator().manual_seed(seed)}
    optimizer = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=config.learning_rate)
    run = resume_rl(checkpoint_dir, policy, optimizer, generators) or ResumedRun(0, [], pd.DataFrame(), pd.DataFrame())
    if run.update:
        logger.info("Resuming RL from %s (update %d)", checkpoint_dir, run.update)
    schedule = Schedule.from_settings(config.schedulers)
    logger.info("RL schedule: %s", schedule.describe())
    rates = schedule.rates
    if run.task_stats:
        rates.load_state_dict(run.task_stats)
    pool = training_task_pool(train_tasks, config.task_fraction, seed)
    return LoopState(run=run, optimizer=optimizer, generators=generators, rates=rates, schedule=schedule, pool=pool)


def play_update(
    policy: Policy, method: Method, producer, env_factory: Callable, state: LoopState, rollout_config: RolloutConfig,
    config: RLConfig, seed: int, update: int, parallel: DataParallel | None,
) -> RolloutBatch:
    """Step 1: the update's rollouts, from the rollout worker (asynchronous) or played here
    with the rollout weights (merged LoRA, dtype) in the method's transition source, a
    rank's shard under ``torchrun``, groups kept by the STEPO filter; then the method's
    changes to the played batch."""
    if state.schedule.asynchronous:  # drawn, played in mini-groups and filtered as the schedule says
        return replay_successes(policy, producer.next_batch(update), state, rollout_config, config, update)
    shard = (lambda tasks: shard_tasks(parallel, tasks)) if parallel is not None else None
    weights = config.rollout_weights
    with inference_policy(policy, weights.merge_lora, weights.dtype) as actor:
        batch = collect_update_batch(
            actor, method.transitions(env_factory), state.pool, state.rates, method.rollout_settings(rollout_config, heldout=False),
            config.tasks_per_update, config.group_size, seed, update,
            tasks=state.schedule.tasks, groups=state.schedule.groups, shard=shard, source=method.row_source,
        )
    batch.update = update
    replay_successes(policy, batch, state, rollout_config, config, update)
    method.after_rollout(policy, batch, rollout_config, config, seed, update)
    return batch


def replay_successes(
    policy: Policy, batch: RolloutBatch, state: LoopState, rollout_config: RolloutConfig, config: RLConfig, update: int
) -> RolloutBatch:
    """The curriculum's difficult positive replay (``training.positive_replay``), when on."""
    if state.schedule.replay is not None:
        batch.metrics.update(state.schedule.replay.replay(
            policy, batch, state.rates, rollout_config, update, batch_size=config.mini_batch_size, token_budget=config.micro_batch_tokens,
        ))
    return batch


def score_batch(
    policy: Policy, method: Method, batch: RolloutBatch, config: RLConfig, schedule: Schedule, max_steps: int
) -> dict[str, float]:
    """Steps 2-3: the recorded log-probs, the method's advantages with the schedule's sample
    weights folded in (STEPO), and the method's signals; returns their metrics."""
    batch.record_old_logprobs()
    batch.advantages, metrics = schedule.weights.advantages(method, batch, config, max_steps)
    if len(batch):
        metrics.update(method.analyze(policy, batch, config))
    return metrics


def train_rl(
    policy: Policy,
    reference_model,
    train_tasks: Sequence[TaskRef],
    env_factory: Callable,
    rollout_config: RolloutConfig,
    config: RLConfig,
    method: Method,
    *,
    seed: int = 0,
    checkpoint_dir: str | Path | None = None,
    evaluate: Callable[[Any, int], dict[str, float]] | None = None,
    log_metrics: Callable[[dict, int], None] | None = None,
    stop_after_updates: int | None = None,
    parallel: DataParallel | None = None,
) -> RLRunResult:
    """Run (or resume) the RL loop of ``method`` (``hindsight.methods.build_method``).

    Args:
        policy: Trained in place; reference_model: the frozen KL reference (the start's).
        train_tasks: The training tasks (``config.task_fraction`` of them are drawn from).
        env_factory: ``spec -> TextEnvironment``; the method may play elsewhere (WM-R1).
        rollout_config, config, method: How episodes are played; the core settings; the method.
        seed: Seed of task draws, rollouts and mini-batch order.
        checkpoint_dir: Where checkpoints go; an existing checkpoint there is resumed.
        evaluate: ``(policy, update) -> metrics`` every ``eval_every`` updates; log_metrics: a sink.
        stop_after_updates: Stop (as if killed) after this many updates of this call.
        parallel: One process of a ``torchrun`` learner (rank 0 evaluates, logs, checkpoints).

    Returns:
        The trained policy, the per-update history, the last skills and rollout tables.
    """
    check_requirements(method, config)  # checked as the parameters are read too; settings built in code, here
    method.check(config, parallel=parallel is not None)
    method.start(policy)
    state = start_loop(policy, train_tasks, config, seed, checkpoint_dir)
    state.schedule.check(method, parallel=parallel is not None)  # before the first rollout
    if state.schedule.replay is not None:
        check_replayable(policy)  # before any update, not at the first replay
    if state.run.method_state:
        method.load_state_dict(state.run.method_state)
    max_steps = rollout_config.max_steps or max(task.spec.max_steps for task in state.pool)
    writer = parallel is None or parallel.is_writer
    reference_model.eval()
    start_update = state.run.update
    end_update = config.updates if stop_after_updates is None else min(config.updates, start_update + stop_after_updates)
    with state.schedule.producer(
        policy, env_factory, state.pool, state.rates, rollout_config, config.tasks_per_update, seed, start_update, end_update,
        group_size=config.group_size, batch_size=config.mini_batch_size, token_budget=config.micro_batch_tokens,
    ) as producer, action_labeller(env_factory, config.action_labels) as labeller:
        for update in range(start_update, end_update):
            started = time.perf_counter()
            batch = play_update(policy, method, producer, env_factory, state, rollout_config, config, seed, update, parallel)
            labeller.annotate(batch, state.pool)
            played_at = time.perf_counter()
            metrics = {**batch.metrics, **score_batch(policy, method, batch, config, state.schedule, max_steps)}
            scored_at = time.perf_counter()
            played = batch.played
            if parallel is not None:  # every rank gets the whole batch; the update runs on stripes of it
                batch = gather_update_batch(parallel, batch)
                metrics, played = mean_over_ranks(parallel, metrics), batch.table  # no STEPO filter under torchrun
            state.rates.observe(played)
            proximal = producer.proximal_logprobs(batch.table, batch.samples, batch.old_logp, update)
            if proximal is not None:  # else the replayed successes' (if any)
                batch.proximal_logp, batch.behaviour_weight_cap = proximal, producer.behaviour_weight_cap
            state.schedule.correction.apply(  # an inexact rollout backend
                policy, batch, rollout_config, metrics, batch_size=config.mini_batch_size, token_budget=config.micro_batch_tokens
            )
            trained_at = time.perf_counter()
            metrics.update(train_on_batch(policy, reference_model, method, batch, config, state, parallel))
            metrics.update(phase_seconds(started, played_at, scored_at, trained_at, time.perf_counter()))
            producer.publish(update + 1)
            metrics.update(rollout_metrics(played, simulated=batch.simulated))
            metrics.update(method.rollout_metrics(played))
            metrics.update(state.schedule.tasks.summary(state.rates))
            metrics["charts/update_seconds"] = time.perf_counter() - started
            finish_update(policy, method, batch, played, metrics, state, config, update + 1, writer, evaluate, log_metrics, checkpoint_dir)
    run = state.run
    return RLRunResult(policy=policy, history=pd.DataFrame(run.history), skills=run.last_skills, last_rollout=run.last_rollout)


def train_on_batch(
    policy: Policy, reference_model, method: Method, batch: RolloutBatch, config: RLConfig, state: LoopState, parallel: DataParallel | None
) -> dict[str, float]:
    """Step 4: the update on the batch (no optimizer step when STEPO kept no group)."""
    if not len(batch):
        return {"losses/total": 0.0, "stepo/empty_update": 1.0}
    return update_policy(
        policy, reference_model, state.optimizer, batch, config, method, state.generators["minibatch"],
        parallel=parallel, minibatches=state.schedule.minibatches, objective=state.schedule.objective,
    )


def finish_update(
    policy: Policy, method: Method, batch: RolloutBatch, played: pd.DataFrame, metrics: dict[str, float], state: LoopState,
    config: RLConfig, done: int, writer: bool, evaluate, log_metrics, checkpoint_dir,
) -> None:
    """Evaluation when due, the history row, logging, and the checkpoint."""
    run = state.run
    if writer and evaluate is not None and config.eval_every and (done % config.eval_every == 0 or done == config.updates):
        evaluated = time.perf_counter()
        metrics.update(evaluate(policy, done))
        metrics["time/eval_s"] = time.perf_counter() - evaluated
    metrics["charts/env_steps_total"] = (run.history[-1]["charts/env_steps_total"] if run.history else 0.0) + metrics["rollout/env_steps"]
    run.history.append({"update": done, **metrics})
    if batch.skills is not None:
        run.last_skills = batch.skills
    # the last rollout: every episode played (STEPO: dropped groups too), or what the batch
    # says to keep (WM-R1: with its replayed stored successes, rows ``source: replay``)
    run.update, run.last_rollout, run.task_stats = done, played if batch.recorded is None else batch.recorded, state.rates.state_dict()
    run.method_state = method.state_dict()
    if writer and log_metrics:
        log_metrics(metrics, done)
    logger.info(
        "update %d/%d %s: success %.2f, loss %.4f, %.1fs",
        done, config.updates, method.name, metrics["rollout/success_rate"], metrics["losses/total"], metrics["charts/update_seconds"],
    )
    if writer and checkpoint_dir is not None and (done % config.checkpoint_every == 0 or done == config.updates):
        save_rl_checkpoint(checkpoint_dir, run, policy, state.optimizer, state.generators)

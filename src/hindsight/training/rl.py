"""The RL loop: rollout -> the policy writes skills -> re-score -> update, for SEED, GRPO,
GiGPO, OPID and EMPO (ALGORITHMS.md sections 1-3; EMPO's environment is expert replay,
``envs.expert_replay``, and its advantage the dual-level one), and WM-R1 (section 4:
rollouts inside a learned world model, ``training.wmr1``). It reads top to bottom in ``train_rl``.

One update:
  1. rollout: pi_old plays ``group_size`` episodes on each of ``tasks_per_update`` tasks,
     drawn uniformly, by STEPO pass-rate calibration or by the curriculum
     (``rollout.curriculum``); STEPO may drop zero-variance groups and refill
     (``training.stepo``);
  2. analysis (SEED / OPID): a teacher writes one skill per finished episode, success and
     failure alike: pi_old itself, greedy (on-policy), or the fixed Stage-1 bank (the
     ablation); an analysis that fails to parse gives no skill, and that episode keeps its
     RL loss but no distillation;
  3. teacher scoring: the sampled response tokens are re-scored with the skill injected into
     the prompt, under the same decoding restriction the actor used: the episode's own
     skill, or for the unrelated-skill control one written for another task type
     (``skill_assignment``, ``skills.assignment``);
  4. advantages: GRPO over the group's step samples (GiGPO adds anchor-state step credit;
     OPID folds the skill's shift into the token advantage);
  5. loss: PPO clip (dual clip) + opd_coef * gated distillation (the gate fixed at 1 for
     the ungated control, ``distill_gate``) + kl_coef * KL to the reference, over
     mini-batches (``rl_update``).
The updated policy is the next update's actor and analyzer (self-evolution). With
``training.rl.async_rollouts`` a rollout worker process plays the rollouts of the next
updates while this one trains, at most ``async_max_staleness`` versions behind, and the
loss is decoupled PPO (``training.async_rollouts``).

Checkpoints hold everything a resumed run needs (model, optimizer, RNG states, update
counter, metric history); a run restarted after being killed continues from the last one
and, on CPU with the same seeds, ends with the same metrics (``checkpoint.resume_rl``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
import torch

from hindsight import algorithms
from hindsight.data.outcomes import episode_outcomes
from hindsight.evaluation.semi_online import empo_rollout_metrics
from hindsight.policy.encoding import StepSample
from hindsight.policy.inference import inference_policy
from hindsight.rollout.curriculum import PassRates
from hindsight.rollout.engine import RolloutConfig
from hindsight.rollout.stats import rollout_metrics
from hindsight.rollout.tasks import TaskRef, training_task_pool
from hindsight.skills.assignment import assigned_skills
from hindsight.skills.episode_views import episodes_from_table
from hindsight.skills.records import skills_table
from hindsight.skills.teachers import Teacher
from hindsight.training.async_rollouts import rollout_producer
from hindsight.training.checkpoint import ResumedRun, resume_rl, save_rl_checkpoint
from hindsight.training.distillation import has_skill, skill_augmented_logprobs
from hindsight.training.data_parallel import DataParallel
from hindsight.training.rl_config import RLConfig
from hindsight.training.rl_parallel import gather_update_batch, mean_over_ranks, shard_tasks
from hindsight.training.rl_update import update_policy
from hindsight.training.stepo import UpdateBatch, collect_update_batch, round_seed, stepo_step_weights
from hindsight.training.wmr1 import replay_stored_successes, wmr1_advantages, world_model_metrics

logger = logging.getLogger(__name__)


@dataclass
class RLRunResult:
    """What one RL run returns: the trained policy and its per-update metric history."""

    policy: Any
    history: pd.DataFrame
    skills: pd.DataFrame
    last_rollout: pd.DataFrame


def compute_advantages(table: pd.DataFrame, config: RLConfig, max_steps: int | None = None) -> torch.Tensor:
    """Sequence-level advantages [N] of the step samples (rows of ``table``, in order); the
    score of a step sample is its episode's return (WM-R1: its reward with the adaptive
    budgets, ``max_steps`` the step limit). EMPO adds the step term over the
    discounted returns broken at mismatched steps, grouped by task and step index."""
    if config.algorithm == "wmr1":
        return wmr1_advantages(table, config, max_steps or int(table["step"].max()) + 1)
    returns = episode_outcomes(table).set_index("episode_id")["return"]
    scores = torch.tensor(table["episode_id"].map(returns).to_numpy(dtype="float64"), dtype=torch.float32)
    group_ids = table["group_id"].tolist()
    if config.algorithm == "gigpo":
        step_returns = algorithms.discounted_returns(
            torch.tensor(table["reward"].to_numpy(), dtype=torch.float32), table["episode_id"].tolist(), config.gigpo_gamma
        )
        return algorithms.gigpo_advantages(
            scores, step_returns, group_ids, table["anchor_observation"].tolist(),
            step_weight=config.gigpo_step_weight, std_normalize=config.std_normalize,
            similarity_threshold=config.gigpo_similarity_threshold,
        )
    if config.algorithm == "empo":
        # returns break at mismatched steps (action_valid False in expert replay: patched or final)
        step_returns = algorithms.discounted_returns(
            torch.tensor(table["reward"].to_numpy(), dtype=torch.float32), table["episode_id"].tolist(), config.empo_gamma,
            break_mask=~table["action_valid"].astype(bool).to_numpy(),
        )
        return algorithms.empo_advantages(scores, step_returns, group_ids, table["step"].tolist(), step_weight=config.empo_step_weight)
    return algorithms.group_normalized_advantages(scores, group_ids, std_normalize=config.std_normalize)


def distillation_targets(
    policy, teacher: Teacher, table: pd.DataFrame, samples: Sequence[StepSample], old_logp: Sequence[torch.Tensor], batch_size: int,
    skill_assignment: str = "own",
) -> tuple[pd.DataFrame, list[torch.Tensor | None], dict[str, float]]:
    """Steps 2-3: one skill per finished episode, then ``l_skill`` of every sample whose
    episode has one (None for the others), re-scored with its own skill or, with
    ``skill_assignment: unrelated``, with one written for another task type
    (``skills.assignment``; the skills table keeps what each episode's analysis wrote).

    Returns:
        (the skills table, ``l_skill`` per sample, the ``opd/...`` metrics of the analysis).
    """
    episodes = episodes_from_table(table)
    skills = skills_table(teacher.write_skills(episodes))
    own = {episode: skill for episode, skill in zip(skills["episode_id"], skills["skill"]) if has_skill(skill)}
    skill_of, metrics = assigned_skills(episodes, own, skill_assignment)
    teacher_logp = skill_augmented_logprobs(policy.model, policy.tokenizer, samples, skill_of, batch_size)
    metrics[teacher.found_metric] = float(skills["parse_ok"].mean()) if len(skills) else 0.0
    with_skill = [i for i, logp in enumerate(teacher_logp) if logp is not None]
    if with_skill:
        # the teacher gap l_skill - l_old over the tokens the policy chose (forced ones say nothing)
        chosen = [torch.tensor(samples[i].choice_positions) for i in with_skill]
        gaps = torch.cat([(teacher_logp[i] - old_logp[i])[keep] for i, keep in zip(with_skill, chosen)])
        if len(gaps):
            metrics["opd/teacher_gap_mean"] = float(gaps.mean())
            metrics["opd/teacher_gap_positive_ratio"] = float((gaps > 0).float().mean())
    metrics["opd/distilled_sample_ratio"] = len(with_skill) / max(len(samples), 1)
    return skills, teacher_logp, metrics


def play_update(
    policy, producer, env_factory: Callable, pool: Sequence[TaskRef], rates: PassRates, rollout_config: RolloutConfig,
    config: RLConfig, seed: int, update: int, *, parallel: DataParallel | None, world_model,
) -> tuple[UpdateBatch, dict[str, float]]:
    """Step 1 of an update: its rollouts, and the metrics of how they were produced.

    Asynchronous: the rollout worker's (``training.async_rollouts``). Otherwise played here
    with the rollout weights (merged LoRA, dtype): the tasks drawn uniformly, by STEPO
    calibration or by the curriculum, a rank's shard under ``torchrun``, groups kept by the
    STEPO filter (``training.stepo``); for WM-R1 inside the world model, with all-failure
    groups replaced by stored successes (``training.wmr1``).
    """
    if config.async_rollouts:
        rollout, metrics = producer.next_rollout(update)
        return UpdateBatch(table=rollout.table, samples=rollout.samples, played=rollout.table), metrics
    wmr1 = config.algorithm == "wmr1"
    shard = (lambda tasks: shard_tasks(parallel, tasks)) if parallel is not None else None
    calls_before = world_model.calls if wmr1 else 0
    if wmr1:  # the world model's environments, with imagined turns when asked for
        env_factory = functools.partial(world_model.make_env, imagined_turns=config.wmr1_imagined_turns)
    with inference_policy(policy, config.rollout_merge_lora, config.rollout_dtype) as actor:
        batch = collect_update_batch(
            actor, env_factory, pool, rates, rollout_config, config, seed, update,
            shard=shard, source="world_model" if wmr1 else "rollout",
        )
    metrics = dict(batch.metrics)
    if wmr1:
        replayed = 0
        if config.wmr1_replay:
            settings = dataclasses.replace(rollout_config, group_size=config.group_size, seed=round_seed(seed, update, 0))
            batch.table, batch.samples, replayed = replay_stored_successes(policy, batch.table, batch.samples, world_model, settings, update)
        metrics.update(world_model_metrics(batch.played, replayed, world_model.calls - calls_before))
        batch.recorded, batch.simulated = batch.table, True
    return batch, metrics


def train_rl(
    policy,
    reference_model,
    train_tasks: Sequence[TaskRef],
    env_factory: Callable,
    rollout_config: RolloutConfig,
    config: RLConfig,
    *,
    seed: int = 0,
    teacher: Teacher | None = None,
    checkpoint_dir: str | Path | None = None,
    evaluate: Callable[[Any, int], dict[str, float]] | None = None,
    log_metrics: Callable[[dict, int], None] | None = None,
    stop_after_updates: int | None = None,
    parallel: DataParallel | None = None,
    world_model=None,
) -> RLRunResult:
    """Run (or resume) the RL loop.

    Args:
        policy: The policy to train in place (the Stage-1 checkpoint for SEED).
        reference_model: The frozen KL reference model (the Stage-1 model).
        train_tasks: The training-task list (its ``task_fraction`` is used).
        env_factory: ``spec -> TextEnvironment`` for the rollout engine.
        rollout_config: How episodes are played.
        config: The RL settings.
        seed: Seed of task draws, rollouts and mini-batch order.
        teacher: Writes the skills when the method uses them (``rl_run.rl_teacher``).
        checkpoint_dir: Where checkpoints go; an existing checkpoint there is resumed.
        evaluate: ``(policy, update) -> metrics``, called every ``eval_every`` updates.
        log_metrics: ``(metrics, step)``, e.g. MLflow.
        stop_after_updates: Stop (as if killed) after this many updates of this call; for
            the resume test and for splitting long runs.
        parallel: One process of a ``torchrun`` learner: it plays its share of each
            update's task groups, the update runs on the gathered batch under DDP
            (``rl_parallel``); rank 0 alone evaluates, logs and writes checkpoints.
        world_model: WM-R1 only: the ``envs.world_model.WorldModelSimulator`` whose
            environments replace ``env_factory`` during training (evaluation stays real).

    Returns:
        The trained policy, the per-update history, the last skills and rollout tables.
    """
    if config.uses_skills and teacher is None:
        raise ValueError(f"training.rl.algorithm={config.algorithm!r} distils from skills: train_rl needs a teacher")
    if config.algorithm == "wmr1" and world_model is None:
        raise ValueError("training.rl.algorithm='wmr1' rolls out inside a trained world model: run `kedro run --pipeline wmr1`")
    wmr1 = config.algorithm == "wmr1"
    if config.async_rollouts and parallel is not None:
        raise ValueError("training.rl.async_rollouts is not supported under torchrun (one rollout worker per learner)")
    if wmr1 and (parallel is not None or config.stepo_filter_zero_variance):
        raise ValueError("training.rl.algorithm='wmr1' runs in one process without STEPO filtering (its replay works on whole groups)")
    torch.manual_seed(seed)
    generators = {"minibatch": torch.Generator().manual_seed(seed)}
    optimizer = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=config.learning_rate)
    pool = training_task_pool(train_tasks, config.task_fraction, seed)
    run = resume_rl(checkpoint_dir, policy, optimizer, generators) or ResumedRun(0, [], pd.DataFrame(), pd.DataFrame())
    rates = PassRates(config.pass_rate_smoothing)  # per-task pass rates (curriculum, STEPO calibration)
    if run.task_stats:
        rates.load_state_dict(run.task_stats)
    start_update = run.update
    if start_update:
        logger.info("Resuming RL from %s (update %d)", checkpoint_dir, start_update)

    reference_model.eval()
    end_update = config.updates if stop_after_updates is None else min(config.updates, start_update + stop_after_updates)
    # the rollouts: played here (synchronous) or by a rollout worker process (training.async_rollouts)
    with rollout_producer(policy, env_factory, pool, rollout_config, config, seed, start_update, end_update) as producer:
        for update in range(start_update, end_update):
            started = time.perf_counter()
            batch, metrics = play_update(
                policy, producer, env_factory, pool, rates, rollout_config, config, seed, update, parallel=parallel, world_model=world_model
            )
            samples = batch.samples
            advantages = compute_advantages(batch.table, config, rollout_config.max_steps or max(task.spec.max_steps for task in pool))
            if config.stepo_step_weights and samples:
                weights, weight_metrics = stepo_step_weights([sample.episode_id for sample in samples])
                advantages = advantages * weights  # = weighting each sample's PPO term (``training.stepo``)
                metrics.update(weight_metrics)
            old_logp = [torch.as_tensor(sample.old_logprobs, dtype=torch.float32) for sample in samples]
            teacher_logp: list[torch.Tensor | None] = [None] * len(samples)
            if config.uses_skills and samples:
                run.last_skills, teacher_logp, skill_metrics = distillation_targets(
                    policy, teacher, batch.table, samples, old_logp, config.mini_batch_size, config.skill_assignment
                )
                metrics.update(skill_metrics)
            table, played = batch.table, batch.played
            if parallel is not None:  # every rank gets the whole batch; the update runs on stripes of it
                table, samples, advantages, old_logp, teacher_logp, run.last_skills = gather_update_batch(
                    parallel, table, samples, advantages, old_logp, teacher_logp, run.last_skills
                )
                metrics = mean_over_ranks(parallel, metrics)
                played = table  # no STEPO filter under torchrun: every played group is in the batch
            rates.observe(played)
            proximal_logp = producer.proximal_logprobs(table, samples, old_logp, update)  # None unless async
            if samples:
                metrics.update(
                    update_policy(
                        policy, reference_model, optimizer, samples, advantages, old_logp, teacher_logp, config, generators["minibatch"],
                        parallel=parallel, proximal_logp=proximal_logp,
                    )
                )
            else:  # STEPO kept no group: nothing to train on, no optimizer step
                metrics.update({"losses/total": 0.0, "stepo/empty_update": 1.0})
            producer.publish(update + 1)
            metrics.update(rollout_metrics(played, simulated=batch.simulated))
            if config.algorithm == "empo":
                metrics.update(empo_rollout_metrics(played))
            if config.curriculum or config.stepo_pass_rate_band is not None:
                metrics.update(rates.summary())
            metrics["charts/update_seconds"] = time.perf_counter() - started
            done = update + 1
            writer = parallel is None or parallel.is_writer
            if writer and evaluate is not None and config.eval_every and (done % config.eval_every == 0 or done == config.updates):
                metrics.update(evaluate(policy, done))
            metrics["charts/env_steps_total"] = (run.history[-1]["charts/env_steps_total"] if run.history else 0.0) + metrics["rollout/env_steps"]
            run.history.append({"update": done, **metrics})
            # the last rollout: every episode played (STEPO: dropped groups too), or what the
            # batch says to keep (WM-R1: with its replayed stored successes, rows ``source: replay``)
            last_rollout = played if batch.recorded is None else batch.recorded
            run.update, run.last_rollout, run.task_stats = done, last_rollout, rates.state_dict()
            if writer and log_metrics:
                log_metrics(metrics, done)
            logger.info(
                "update %d/%d %s: success %.2f, loss %.4f, %.1fs",
                done, config.updates, config.algorithm, metrics["rollout/success_rate"], metrics["losses/total"], metrics["charts/update_seconds"],
            )
            if writer and checkpoint_dir is not None and (done % config.checkpoint_every == 0 or done == config.updates):
                save_rl_checkpoint(checkpoint_dir, run, policy, optimizer, generators)
    return RLRunResult(policy=policy, history=pd.DataFrame(run.history), skills=run.last_skills, last_rollout=run.last_rollout)

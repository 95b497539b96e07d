"""The RL loop: rollout -> the policy writes skills -> re-score -> update, for SEED, GRPO,
GiGPO and OPID (ALGORITHMS.md sections 1 and 2). It reads top to bottom in ``train_rl``.

One update:
  1. rollout: pi_old plays ``group_size`` episodes on each of ``tasks_per_update`` tasks;
  2. analysis (SEED / OPID): pi_old, greedy, writes one skill per finished episode, success
     and failure alike (or the skill comes from a fixed bank, for the ablation); a JSON that
     fails to parse gives no skill, and that episode keeps its RL loss but no distillation;
  3. teacher scoring: the sampled response tokens are re-scored with the skill injected into
     the prompt, under the same decoding restriction the actor used;
  4. advantages: GRPO over the group's step samples (GiGPO adds anchor-state step credit;
     OPID folds the skill's shift into the token advantage);
  5. loss: PPO clip (dual clip) + opd_coef * gated distillation + kl_coef * KL to the
     reference, over mini-batches.
The updated policy is the next update's actor and analyzer (self-evolution).

Token tensors are response-aligned: with left padding the response of every sample ends at
the last column, so the last R columns of a [B, L] batch hold the responses, right-aligned.
The same sample's response occupies the same columns in its plain and its skill-augmented
batch, which is what lets ``l`` and ``l_skill`` be compared token by token.

Checkpoints hold everything a resumed run needs (model, optimizer, RNG states, update
counter, skill bank, metric history); a run restarted after being killed continues from the
last one and, on CPU with the same seeds, ends with the same metrics.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from hindsight import algorithms
from hindsight.policy.encoding import token_budget_chunks
from hindsight.policy.logprobs import token_logprobs
from hindsight.rollout.engine import RolloutConfig, TaskRef, run_rollouts
from hindsight.skills.episodes import episodes_from_table
from hindsight.skills.teachers import PolicyTeacher, policy_analyzer
from hindsight.training.distillation import response_logprobs, skill_augmented_logprobs
from hindsight.training.samples import ResponseSample, collate_responses, samples_from_rollout
from hindsight.training.checkpoint import (
    latest_checkpoint,
    load_training_state,
    restore_rng_state,
    save_checkpoint,
)
from hindsight.training.rl_config import RLConfig

logger = logging.getLogger(__name__)


@dataclass
class RLRunResult:
    """What one RL run returns: the trained policy and its per-update metric history."""

    policy: Any
    history: pd.DataFrame
    skills: pd.DataFrame
    last_rollout: pd.DataFrame


def sample_update_tasks(pool: Sequence[TaskRef], config: RLConfig, update: int) -> list[TaskRef]:
    """The tasks of one update: a deterministic draw (seed, update) from the run's pool."""
    rng = random.Random(config.seed * 1_000_003 + update)
    size = min(config.tasks_per_update, len(pool))
    return rng.sample(list(pool), size)


def training_task_pool(tasks: Sequence[TaskRef], fraction: float, seed: int) -> list[TaskRef]:
    """The first ``fraction`` of a shuffled (fixed seed) training-task list: smaller
    fractions are subsets of larger ones, so the data-efficiency grid is nested."""
    shuffled = list(tasks)
    random.Random(seed).shuffle(shuffled)
    keep = max(1, round(fraction * len(shuffled)))
    return shuffled[:keep]


def episode_scores(table: pd.DataFrame) -> np.ndarray:
    """Per step sample, the return of its episode (the score GRPO normalises)."""
    returns = table.groupby("episode_id")["reward"].transform("sum")
    return returns.to_numpy(dtype=np.float64)


def compute_advantages(table: pd.DataFrame, config: RLConfig) -> torch.Tensor:
    """Sequence-level advantages [N] of the step samples (rows of ``table``, in order)."""
    scores = torch.tensor(episode_scores(table), dtype=torch.float32)
    group_ids = table["group_id"].tolist()
    if config.algorithm == "gigpo":
        step_returns = algorithms.discounted_returns(
            torch.tensor(table["reward"].to_numpy(), dtype=torch.float32),
            table["episode_id"].tolist(),
            config.gigpo_gamma,
        )
        return algorithms.gigpo_advantages(
            scores,
            step_returns,
            group_ids,
            table["anchor_observation"].tolist(),
            step_weight=config.gigpo_step_weight,
            similarity_threshold=config.gigpo_similarity_threshold,
        )
    return algorithms.group_normalized_advantages(scores, group_ids, std_normalize=config.std_normalize)


def write_skills(
    policy,
    table: pd.DataFrame,
    config: RLConfig,
    skill_bank: dict[str, str],
) -> pd.DataFrame:
    """One skill per finished episode: written by the policy (greedy) or taken from the bank.

    Returns:
        Columns episode_id, group_id, success, skill (None when none), parse_ok, teacher.
    """
    if config.skill_source == "fixed_bank":
        rows = []
        for episode_id, group in table.groupby("episode_id", sort=False):
            group_id = group["group_id"].iloc[0]
            skill = skill_bank.get(group_id) or skill_bank.get(group["task_type"].iloc[0])
            rows.append(
                {
                    "episode_id": episode_id,
                    "group_id": group_id,
                    "success": bool(group["won"].any()),
                    "skill": skill,
                    "parse_ok": skill is not None,
                    "teacher": "fixed_bank",
                }
            )
        return pd.DataFrame(rows)
    teacher = PolicyTeacher(
        policy_analyzer(policy, config.analyzer_max_new_tokens, config.analyzer_structured),
        max_prompt_chars=config.analyzer_max_prompt_chars,
    )
    records = teacher.write_skills(episodes_from_table(table))
    return pd.DataFrame(
        [
            {
                "episode_id": r.episode_id,
                "group_id": r.group_id,
                "success": r.success,
                "skill": r.skill if r.parse_ok else None,
                "parse_ok": r.parse_ok,
                "teacher": r.teacher,
            }
            for r in records
        ]
    )


def _pad_right_aligned(rows: Sequence[torch.Tensor], width: int) -> torch.Tensor:
    out = torch.zeros(len(rows), width)
    for index, row in enumerate(rows):
        if len(row):
            out[index, -len(row) :] = row
    return out


def _micro_batch_losses(
    model,
    chunk: Sequence[ResponseSample],
    pad: int,
    advantage: torch.Tensor,
    old_rows: Sequence[torch.Tensor],
    teacher_rows: Sequence[torch.Tensor | None],
    reference_rows: Sequence[torch.Tensor] | None,
    config: RLConfig,
    device,
):
    """The aggregated loss terms of one micro-batch (each over its own tokens), their masks
    and their metrics: ``{term: (loss, mask, metrics)}`` for ppo, opd and kl."""
    batch = collate_responses(chunk, pad)
    width = batch.response_width
    tokens = batch.tokens.to(device)
    logp = token_logprobs(model, tokens)[:, -width:].float().cpu()
    mask = tokens.response_mask[:, -width:].float().cpu()
    old = _pad_right_aligned(old_rows, width)
    has_teacher = torch.tensor([row is not None for row in teacher_rows], dtype=torch.float32)
    teacher = _pad_right_aligned(
        [row if row is not None else torch.zeros(len(sample.response_ids)) for row, sample in zip(teacher_rows, chunk)],
        width,
    )
    distill_mask = mask * has_teacher[:, None]
    if config.algorithm == "opid":
        advantage = algorithms.opid_advantages(advantage, teacher, old, distill_mask, weight=config.opid_weight)
    terms = {}
    loss, ppo_metrics = algorithms.ppo_clip_loss(
        logp, old, advantage, mask,
        clip_low=config.clip_low, clip_high=config.clip_high, dual_clip=config.dual_clip, agg=config.loss_agg,
    )
    terms["ppo"] = (loss, mask, {f"ppo/{k}": float(v) for k, v in ppo_metrics.items()})
    if config.algorithm == "seed" and config.distill and distill_mask.sum() > 0:
        opd, opd_metrics = algorithms.opd_loss(logp, teacher, distill_mask, gate_beta=config.gate_beta, agg=config.loss_agg)
        terms["opd"] = (opd, distill_mask, {f"opd/{k}": float(v) for k, v in opd_metrics.items()})
    if reference_rows is not None:
        reference = _pad_right_aligned(reference_rows, width)
        kl = algorithms.aggregate_loss(algorithms.kl_low_var(logp, reference), mask, config.loss_agg)
        terms["kl"] = (kl, mask, {})
    return terms


def update_policy(
    policy,
    reference_model,
    optimizer: torch.optim.Optimizer,
    samples: Sequence[ResponseSample],
    advantages: torch.Tensor,
    old_logp: Sequence[torch.Tensor],
    teacher_logp: Sequence[torch.Tensor | None],
    config: RLConfig,
    generator: torch.Generator,
) -> dict[str, float]:
    """PPO epochs over mini-batches; returns the mean of every logged metric over the
    mini-batches that logged it (the opd metrics only over those with distilled tokens).

    A mini-batch is one optimizer step. Its forward/backward passes run over micro-batches
    of at most ``config.micro_batch_tokens`` padded tokens (samples sorted by length), each
    term's loss weighted by its micro-batch's share of the term's aggregation count
    (``algorithms.aggregation_count``), so the accumulated gradient is the mini-batch's
    gradient while the activation memory is bounded by the budget, not the batch size.
    """
    model, pad = policy.model, policy.tokenizer.pad_token_id
    coefficient = {"ppo": 1.0, "opd": config.opd_coef, "kl": config.kl_coef}
    reference_logp = (
        response_logprobs(reference_model, samples, config.mini_batch_size, pad, token_budget=config.micro_batch_tokens)
        if config.kl_coef
        else None
    )
    lengths = [len(sample.encoded.input_ids) for sample in samples]
    model.train()
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for _ in range(config.ppo_epochs):
        order = torch.randperm(len(samples), generator=generator).tolist()
        for start in range(0, len(order), config.mini_batch_size):
            index = sorted(order[start : start + config.mini_batch_size], key=lambda i: lengths[i])
            micro_batches = token_budget_chunks(index, lengths, config.micro_batch_tokens)
            totals = _aggregation_totals(samples, index, teacher_logp, config)
            optimizer.zero_grad(set_to_none=True)
            losses: dict[str, float] = {}
            weighted: dict[str, float] = {}
            for micro in micro_batches:
                terms = _micro_batch_losses(
                    model, [samples[i] for i in micro], pad, advantages[micro],
                    [old_logp[i] for i in micro], [teacher_logp[i] for i in micro],
                    [reference_logp[i] for i in micro] if reference_logp is not None else None,
                    config, policy.device,
                )
                total = torch.zeros(())
                for name, (loss, mask, metrics) in terms.items():
                    share = algorithms.aggregation_count(mask, config.loss_agg) / max(totals[name], 1.0)
                    total = total + coefficient[name] * share * loss
                    losses[name] = losses.get(name, 0.0) + share * float(loss.detach())
                    for key, value in metrics.items():  # token-weighted mean over the micro-batches
                        weighted[key] = weighted.get(key, 0.0) + share * value
                total.backward()
            metrics = dict(weighted)
            metrics["losses/ppo"] = losses["ppo"]
            if "opd" in losses:
                metrics["losses/opd"] = losses["opd"]
            if "kl" in losses:
                metrics["kl/ref"] = losses["kl"]
            metrics["losses/total"] = sum(coefficient[name] * value for name, value in losses.items())
            metrics["losses/grad_norm"] = float(
                torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], config.max_grad_norm)
            )
            optimizer.step()
            for key, value in metrics.items():
                sums[key] = sums.get(key, 0.0) + value
                counts[key] = counts.get(key, 0) + 1
    model.eval()
    return {key: value / counts[key] for key, value in sums.items()}


def _aggregation_totals(
    samples: Sequence[ResponseSample], index: Sequence[int], teacher_logp: Sequence[torch.Tensor | None], config: RLConfig
) -> dict[str, float]:
    """Each loss term's aggregation count over the whole mini-batch: its masks are every
    response (ppo, kl) or the responses with a teacher (opd), one row per sample."""

    def count(rows: list[int]) -> float:
        mask = torch.zeros(len(rows), max((len(samples[i].response_ids) for i in rows), default=0))
        for row, i in enumerate(rows):
            mask[row, : len(samples[i].response_ids)] = 1
        return algorithms.aggregation_count(mask, config.loss_agg)

    every = count(list(index))
    return {"ppo": every, "kl": every, "opd": count([i for i in index if teacher_logp[i] is not None])}


def train_rl(
    policy,
    reference_model,
    train_tasks: Sequence[TaskRef],
    env_factory: Callable,
    rollout_config: RolloutConfig,
    config: RLConfig,
    checkpoint_dir: str | Path | None = None,
    skill_bank: dict[str, str] | None = None,
    evaluate: Callable[[Any, int], dict[str, float]] | None = None,
    log_metrics: Callable[[dict, int], None] | None = None,
    stop_after_updates: int | None = None,
) -> RLRunResult:
    """Run (or resume) the RL loop.

    Args:
        policy: The policy to train in place (the Stage-1 checkpoint for SEED).
        reference_model: The frozen KL reference model (the Stage-1 model).
        train_tasks: The training-task list (its ``task_fraction`` is used).
        env_factory: ``spec -> TextEnvironment`` for the rollout engine.
        rollout_config: How episodes are played.
        config: The RL settings.
        checkpoint_dir: Where checkpoints go; an existing checkpoint there is resumed.
        skill_bank: group_id or task_type -> skill, for ``skill_source="fixed_bank"``.
        evaluate: ``(policy, update) -> metrics``, called every ``eval_every`` updates.
        log_metrics: ``(metrics, step)``, e.g. MLflow.
        stop_after_updates: Stop (as if killed) after this many updates of this call; for
            the resume test and for splitting long runs.

    Returns:
        The trained policy, the per-update history, the last skills and rollout tables.
    """
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    optimizer = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=config.learning_rate)
    pool = training_task_pool(train_tasks, config.task_fraction, config.seed)
    history: list[dict[str, float]] = []
    start_update = 0
    skill_bank = dict(skill_bank or {})
    skills_table, rollout_table = pd.DataFrame(), pd.DataFrame()
    if checkpoint_dir is not None and (checkpoint := latest_checkpoint(checkpoint_dir)) is not None:
        from hindsight.policy.model import load_policy

        state = load_training_state(checkpoint)
        # Copy the saved weights into the caller's model instead of training the loaded one:
        # the policy stays trained in place, and its parameters keep their allocator-aligned
        # memory. Tensors read from safetensors sit at other alignments, where CPU matmul
        # kernels round differently (1-2 ulp), which broke the bit-exact resume.
        saved = load_policy(checkpoint / "policy", device=policy.device)
        policy.model.load_state_dict(saved.model.state_dict())
        policy.version = saved.version
        del saved
        optimizer.load_state_dict(state.optimizer)
        restore_rng_state(state.rng, {"minibatch": generator})
        history = list(state.extra.get("history", []))
        skill_bank = dict(state.extra.get("skill_bank", skill_bank))
        # The last update's tables, so that re-running a finished run returns them, not empty ones.
        skills_table = state.extra.get("last_skills", skills_table)
        rollout_table = state.extra.get("last_rollout", rollout_table)
        start_update = state.update
        logger.info("Resuming RL from %s (update %d)", checkpoint, start_update)

    reference_model.eval()
    for update in range(start_update, config.updates):
        if stop_after_updates is not None and update - start_update >= stop_after_updates:
            break
        started = time.perf_counter()
        tasks = sample_update_tasks(pool, config, update)
        rollout = run_rollouts(
            policy, env_factory, tasks, rollout_config_for_update(rollout_config, config, update), policy_version=update
        )
        rollout_table = rollout.table
        samples = samples_from_rollout(rollout.samples, max_length=rollout_config.max_length)
        advantages = compute_advantages(rollout_table, config)
        old_logp = [torch.as_tensor(sample.old_logprobs, dtype=torch.float32) for sample in rollout.samples]
        teacher_logp: list[torch.Tensor | None] = [None] * len(samples)
        metrics: dict[str, float] = {}

        if config.uses_skills:
            skills_table = write_skills(policy, rollout_table, config, skill_bank)
            skill_of = dict(zip(skills_table["episode_id"], skills_table["skill"]))
            metrics["opd/skill_parse_rate"] = float(skills_table["parse_ok"].mean()) if len(skills_table) else 0.0
            teacher_logp = skill_augmented_logprobs(policy.model, policy.tokenizer, samples, skill_of, config.mini_batch_size)
            with_skill = [i for i, logp in enumerate(teacher_logp) if logp is not None]
            if with_skill:
                gaps = torch.cat([teacher_logp[i] - old_logp[i] for i in with_skill])
                metrics["opd/teacher_gap_mean"] = float(gaps.mean())
            metrics["opd/distilled_sample_ratio"] = len(with_skill) / max(len(samples), 1)

        metrics.update(
            update_policy(policy, reference_model, optimizer, samples, advantages, old_logp, teacher_logp, config, generator)
        )
        episodes = rollout_table.groupby("episode_id")
        metrics.update(
            {
                "rollout/success_rate": float(episodes["won"].any().mean()),
                "rollout/mean_return": float(episodes["reward"].sum().mean()),
                "rollout/mean_steps": float(episodes.size().mean()),
                "rollout/invalid_action_rate": float(1 - rollout_table["action_valid"].mean()),
                "rollout/env_steps": float(len(rollout_table)),
                "charts/update_seconds": time.perf_counter() - started,
            }
        )
        done = update + 1
        if evaluate is not None and config.eval_every and (done % config.eval_every == 0 or done == config.updates):
            metrics.update(evaluate(policy, done))
        cumulative = (history[-1]["charts/env_steps_total"] if history else 0.0) + metrics["rollout/env_steps"]
        metrics["charts/env_steps_total"] = cumulative
        history.append({"update": done, **metrics})
        if log_metrics:
            log_metrics(metrics, done)
        logger.info(
            "update %d/%d %s: success %.2f, loss %.4f, %.1fs",
            done, config.updates, config.algorithm, metrics["rollout/success_rate"], metrics["losses/total"], metrics["charts/update_seconds"],
        )
        if checkpoint_dir is not None and (done % config.checkpoint_every == 0 or done == config.updates):
            save_checkpoint(
                checkpoint_dir, done, policy, optimizer,
                generators={"minibatch": generator},
                extra={"history": history, "skill_bank": skill_bank, "last_skills": skills_table, "last_rollout": rollout_table},
            )
    return RLRunResult(policy=policy, history=pd.DataFrame(history), skills=skills_table, last_rollout=rollout_table)


def rollout_config_for_update(base: RolloutConfig, config: RLConfig, update: int) -> RolloutConfig:
    """The rollout settings of one update: group size from the RL config and a seed that
    depends on (run seed, update) only, so a resumed run replays the same episodes."""
    return dataclasses.replace(base, group_size=config.group_size, seed=config.seed * 1_000_003 + update)

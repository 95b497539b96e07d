"""One RL update of the policy: PPO epochs over mini-batches of step samples, each loss
term (PPO clip, gated on-policy distillation, or ungated with ``distill_gate: ungated``, KL
to the reference) a named ``LossTerm`` (ALGORITHMS.md section 1, step 5).

Token tensors are response-aligned: with left padding the response of every sample ends at
the last column, so the last R columns of a [B, L] batch hold the responses, right-aligned.
The same sample's response occupies the same columns in its plain and its skill-augmented
batch, which is what lets ``l`` and ``l_skill`` be compared token by token.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from dataclasses import dataclass
from typing import Sequence

import torch

from hindsight import algorithms
from hindsight.policy.encoding import StepSample, collate
from hindsight.policy.logprobs import token_logprobs
from hindsight.training.distillation import response_logprobs
from hindsight.training.data_parallel import DataParallel, micro_batch_plan
from hindsight.training.episode_batches import chain_micro_batch_plan, is_multiturn, right_aligned_logprobs
from hindsight.training.minibatches import epoch_minibatches
from hindsight.training.rl_config import RLConfig

logger = logging.getLogger(__name__)


@dataclass
class LossTerm:
    """One term of the loss in one micro-batch."""

    name: str
    """ppo, opd or kl (its coefficient: 1, ``opd_coef``, ``kl_coef``)."""
    loss: torch.Tensor
    """The term aggregated over its own tokens (``config.loss_agg``)."""
    mask: torch.Tensor
    """[B, R] the tokens it was aggregated over (every response, or the distilled ones)."""
    metrics: dict[str, float]
    """Its diagnostics (``ppo/clipfrac``, ``opd/gate_mean``, ...)."""


def _pad_right_aligned(rows: Sequence[torch.Tensor], width: int) -> torch.Tensor:
    out = torch.zeros(len(rows), width)
    for index, row in enumerate(rows):
        if len(row):
            out[index, -len(row) :] = row
    return out


def micro_batch_loss_terms(
    model,
    chunk: Sequence[StepSample],
    pad: int,
    advantage: torch.Tensor,
    old_rows: Sequence[torch.Tensor],
    teacher_rows: Sequence[torch.Tensor | None],
    reference_rows: Sequence[torch.Tensor] | None,
    config: RLConfig,
    device,
    proximal_rows: Sequence[torch.Tensor] | None = None,
) -> list[LossTerm]:
    """The loss terms of one micro-batch, each aggregated over its own tokens: ppo always,
    opd when SEED distils and some sample has a teacher, kl when a reference is given.
    With ``proximal_rows`` (asynchronous rollouts) the ppo term is decoupled PPO:
    ``old_rows`` are the behaviour log-probs, the clip is centred on the proximal ones."""
    if is_multiturn(chunk):  # one forward pass per episode (training.episode_batches)
        logp, mask, width = right_aligned_logprobs(model, chunk, pad)
    else:
        tokens = collate(chunk, pad).to(device)
        width = tokens.response_width
        logp = token_logprobs(model, tokens)[:, -width:].float().cpu()
        mask = tokens.choice_mask[:, -width:].float().cpu()  # response tokens the policy chose (no forced ones)
    old = _pad_right_aligned(old_rows, width)
    has_teacher = torch.tensor([row is not None for row in teacher_rows], dtype=torch.float32)
    teacher = _pad_right_aligned(
        [row if row is not None else torch.zeros(len(sample.response_ids)) for row, sample in zip(teacher_rows, chunk)],
        width,
    )
    distill_mask = mask * has_teacher[:, None]
    if config.algorithm == "opid":
        advantage = algorithms.opid_advantages(advantage, teacher, old, distill_mask, weight=config.opid_weight)
    terms = []
    if proximal_rows is None:
        loss, ppo_metrics = algorithms.ppo_clip_loss(
            logp, old, advantage, mask,
            clip_low=config.clip_low, clip_high=config.clip_high, dual_clip=config.dual_clip, agg=config.loss_agg,
        )
    else:
        loss, ppo_metrics = algorithms.decoupled_ppo_loss(
            logp, _pad_right_aligned(proximal_rows, width), old, advantage, mask,
            clip_low=config.clip_low, clip_high=config.clip_high, dual_clip=config.dual_clip,
            behaviour_weight_cap=config.async_behaviour_weight_cap, agg=config.loss_agg,
        )
    ppo_metrics = {f"ppo/{k}": float(v) for k, v in ppo_metrics.items()}
    # |l - l_old|: before the first optimizer step l is the old policy recomputed by the trainer
    ppo_metrics["rollout/logprob_gap"] = float(algorithms.masked_mean((logp - old).abs().detach(), mask))
    terms.append(LossTerm("ppo", loss, mask, ppo_metrics))
    if config.algorithm == "seed" and config.distill and distill_mask.sum() > 0:
        opd, opd_metrics = algorithms.opd_loss(
            logp, teacher, distill_mask, gate_beta=config.gate_beta, agg=config.loss_agg, gate=config.distill_gate
        )
        # the gap is logged once, before the update, as l_skill - l_old (training.rl.distillation_targets)
        gate_metrics = {f"opd/{k}": float(v) for k, v in opd_metrics.items() if k != "teacher_gap_mean"}
        terms.append(LossTerm("opd", opd, distill_mask, gate_metrics))
    if reference_rows is not None:
        reference = _pad_right_aligned(reference_rows, width)
        kl = algorithms.aggregate_loss(algorithms.kl_low_var(logp, reference), mask, config.loss_agg)
        terms.append(LossTerm("kl", kl, mask, {}))
    return terms


class ReferenceLogprobs:
    """The KL reference model's log-probs of each sample's response. One process scores
    every sample up front, in length-sorted batches; under ``torchrun`` (``lazy``) a rank
    scores a sample the first time one of its micro-batches needs it, so each rank reads
    only its stripes instead of the whole gathered batch."""

    def __init__(self, model, samples: Sequence[StepSample], config: RLConfig, pad_token_id: int, lazy: bool) -> None:
        self._score = functools.partial(
            response_logprobs, model, batch_size=config.mini_batch_size, pad_token_id=pad_token_id,
            token_budget=config.micro_batch_tokens,
        )
        self._samples = samples
        self._rows: dict[int, torch.Tensor] = {} if lazy else dict(enumerate(self._score(samples)))

    @property
    def scored(self) -> int:
        """How many samples have been scored so far."""
        return len(self._rows)

    def rows(self, indices: Sequence[int]) -> list[torch.Tensor]:
        """The log-probs of these samples (scored now if not yet)."""
        missing = [i for i in indices if i not in self._rows]
        if missing:
            self._rows.update(zip(missing, self._score([self._samples[i] for i in missing])))
        return [self._rows[i] for i in indices]


def update_policy(
    policy,
    reference_model,
    optimizer: torch.optim.Optimizer,
    samples: Sequence[StepSample],
    advantages: torch.Tensor,
    old_logp: Sequence[torch.Tensor],
    teacher_logp: Sequence[torch.Tensor | None],
    config: RLConfig,
    generator: torch.Generator,
    parallel: DataParallel | None = None,
    proximal_logp: Sequence[torch.Tensor] | None = None,
) -> dict[str, float]:
    """PPO epochs over mini-batches; returns the mean of every logged metric over the
    mini-batches that logged it (the opd metrics only over those with distilled tokens),
    ``rollout/logprob_gap`` (mean |l - l_old| over the chosen tokens of the first
    mini-batch, before any step: the recorded sampling-time log-probs against the trainer's
    recomputation, about 0 on CPU), and ``faults/skipped_updates``: mini-batches whose loss or gradient was not finite,
    skipped without a step (the weights and the optimizer state stay as they were).

    A mini-batch is one optimizer step. Its forward/backward passes run over micro-batches
    of at most ``config.micro_batch_tokens`` padded tokens (samples sorted by length), each
    term's loss weighted by its micro-batch's share of the term's aggregation count
    (``algorithms.aggregation_count``), so the accumulated gradient is the mini-batch's
    gradient while the activation memory is bounded by the budget, not the batch size.

    With ``parallel`` (one process of a ``torchrun`` learner, every rank given the same
    samples and generator state) each rank runs its stripe of every mini-batch under DDP;
    the step equals the one-process step up to float rounding (``data_parallel``).
    ``proximal_logp`` (asynchronous rollouts): per sample, the log-probs of the learner's
    version before this update; ``old_logp`` are then the behaviour log-probs and the ppo
    term is ``algorithms.decoupled_ppo_loss``.
    """
    model, pad = policy.model, policy.tokenizer.pad_token_id
    coefficient = {"ppo": 1.0, "opd": config.opd_coef, "kl": config.kl_coef}
    reference = ReferenceLogprobs(reference_model, samples, config, pad, lazy=parallel is not None) if config.kl_coef else None
    lengths = [len(sample.input_ids) for sample in samples]
    replica = parallel.wrap(model) if parallel is not None else model  # what the gradients flow through
    scale = parallel.gradient_scale if parallel is not None else 1.0
    multiturn = is_multiturn(samples)
    model.train()
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    skipped = 0
    episode_ids = [sample.episode_id for sample in samples]
    minibatch_count = 0
    for epoch in range(config.ppo_epochs):
        # plain shuffle, or whole episodes per mini-batch (``training.minibatches``): ODYSSE, and
        # always in the multi-turn layout, where an episode is one forward pass (``training.episode_batches``)
        batches = epoch_minibatches(
            episode_ids, config.mini_batch_size, generator, episodic=config.odysse_episode_minibatches or multiturn
        )
        minibatch_count += len(batches)
        for batch_number, members in enumerate(batches):
            index = sorted(members, key=lambda i: lengths[i])
            plan = (
                chain_micro_batch_plan(parallel, samples, index, config.micro_batch_tokens)
                if multiturn
                else micro_batch_plan(parallel, index, lengths, config.micro_batch_tokens)
            )
            totals = _aggregation_totals(samples, index, teacher_logp, config)
            optimizer.zero_grad(set_to_none=True)
            losses: dict[str, float] = {}
            weighted: dict[str, float] = {}
            for number, (micro, weight) in enumerate(plan):
                with parallel.synchronised(replica, number == len(plan) - 1) if parallel else contextlib.nullcontext():
                    terms = micro_batch_loss_terms(
                        replica, [samples[i] for i in micro], pad, advantages[micro],
                        [old_logp[i] for i in micro], [teacher_logp[i] for i in micro],
                        reference.rows(micro) if reference is not None else None,
                        config, policy.device,
                        [proximal_logp[i] for i in micro] if proximal_logp is not None else None,
                    )
                    total = torch.zeros(())
                    for term in terms:
                        share = weight * algorithms.aggregation_count(term.mask, config.loss_agg) / max(totals[term.name], 1.0)
                        total = total + coefficient[term.name] * share * term.loss
                        losses[term.name] = losses.get(term.name, 0.0) + share * float(term.loss.detach())
                        for key, value in term.metrics.items():  # token-weighted mean over the micro-batches
                            weighted[key] = weighted.get(key, 0.0) + share * value
                    (total * scale).backward()
            if parallel is not None:  # each rank holds its part of every sum
                weighted, losses = parallel.sum_metrics(weighted), parallel.sum_metrics(losses)
            metrics = dict(weighted)
            if epoch or batch_number:  # only the first mini-batch still sees the weights that sampled
                metrics.pop("rollout/logprob_gap", None)
            metrics["losses/ppo"] = losses["ppo"]
            if "opd" in losses:
                metrics["losses/opd"] = losses["opd"]
            if "kl" in losses:
                metrics["kl/ref"] = losses["kl"]
            metrics["losses/total"] = sum(coefficient[name] * value for name, value in losses.items())
            metrics["losses/grad_norm"] = float(
                torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], config.max_grad_norm)
            )
            if not (math.isfinite(metrics["losses/total"]) and math.isfinite(metrics["losses/grad_norm"])):
                # a NaN or inf loss or gradient: no step (weights and optimizer state unchanged)
                optimizer.zero_grad(set_to_none=True)
                skipped += 1
                logger.warning("RL mini-batch skipped: loss %s, gradient norm %s", metrics["losses/total"], metrics["losses/grad_norm"])
                continue
            optimizer.step()
            for key, value in metrics.items():
                sums[key] = sums.get(key, 0.0) + value
                counts[key] = counts.get(key, 0) + 1
    model.eval()
    result = {**{key: value / counts[key] for key, value in sums.items()}, "faults/skipped_updates": float(skipped)}
    if config.odysse_episode_minibatches:
        result["odysse/minibatches_per_epoch"] = minibatch_count / max(config.ppo_epochs, 1)
    return result


def _aggregation_totals(
    samples: Sequence[StepSample], index: Sequence[int], teacher_logp: Sequence[torch.Tensor | None], config: RLConfig
) -> dict[str, float]:
    """Each loss term's aggregation count over the whole mini-batch: its masks are every
    response (ppo, kl) or the responses with a teacher (opd), forced tokens left out, one
    row per sample."""

    def count(rows: list[int]) -> float:
        mask = torch.zeros(len(rows), max((len(samples[i].response_ids) for i in rows), default=0))
        for row, i in enumerate(rows):
            mask[row, : len(samples[i].response_ids)] = torch.tensor(samples[i].choice_positions, dtype=torch.float32)
        return algorithms.aggregation_count(mask, config.loss_agg)

    every = count(list(index))
    return {"ppo": every, "kl": every, "opd": count([i for i in index if teacher_logp[i] is not None])}

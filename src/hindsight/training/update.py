"""One RL update of the policy (step 4 of the loop in ``training.loop``): PPO epochs over
mini-batches of a ``RolloutBatch`` (``update_policy``), one optimizer step per mini-batch
over micro-batches (``minibatch_step``), and the loss of one micro-batch assembled in one
function, term by term (``micro_batch_loss_terms``): PPO clip (or decoupled PPO on stale
samples), the method's own terms (``Method.extra_loss_terms``: SEED's gated distillation),
the entropy bonus (``training.rl.entropy_coef``, any method) and the KL to the reference.
Every update also logs the run's health whatever the coefficients (``health_metrics``:
``health/entropy``, ``health/kl_to_start``), measured without gradient when not a loss term.

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
from typing import Sequence

import torch

from hindsight import algorithms
from hindsight.policy import Policy
from hindsight.policy.encoding import StepSample
from hindsight.training.batch import MicroBatch, RolloutBatch
from hindsight.training.data_parallel import DataParallel, micro_batch_plan
from hindsight.training.distillation import response_logprobs
from hindsight.training.episode_batches import episode_chains, is_multiturn
from hindsight.training.minibatches import MinibatchOrder
from hindsight.training.loss_terms import LossTerm, MinibatchObjective, MinibatchTerm
from hindsight.training.method import Method
from hindsight.training.response_tensors import pad_right_aligned, policy_response_logprobs
from hindsight.training.rl_config import RLConfig


logger = logging.getLogger(__name__)


def micro_batch_loss_terms(
    model, micro: MicroBatch, pad: int, reference_rows: Sequence[torch.Tensor] | None, config: RLConfig, method: Method, device,
    episodes: MinibatchTerm | None = None,
) -> list[LossTerm]:
    """The loss of one micro-batch, assembled here term by term, each aggregated over its own
    tokens (``training.rl.ppo.loss_agg``) and weighed by its ``coefficient`` in the total
    (``minibatch_step``):

    1. ``ppo``: the clipped (dual-clip) PPO term on the method's token advantages. With
       ``micro.proximal_logp`` (asynchronous rollouts, replayed successes, an inexact rollout
       backend) it is decoupled PPO: ``old_logp`` are the behaviour log-probs, the clip is
       centred on the proximal ones, the weight capped at ``micro.behaviour_weight_cap``. With
       ``episodes`` (the schedule's mini-batch objective, ESPO: ``training.espo_update``) it is
       that objective's share of the mini-batch's loss.
    2. the method's own terms (``Method.extra_loss_terms``: SEED's gated distillation on the
       samples that have a teacher);
    3. ``entropy``, weighing ``-entropy_coef``, when ``training.rl.entropy_coef`` is not 0;
    4. ``kl`` to the reference, weighing ``kl_coef``, when ``kl_coef`` is not 0.

    Whatever the coefficients, the policy term also carries the run's health
    (``health_metrics``): the token entropy and, with ``reference_rows``, the KL to the
    start, measured without gradient when they are no loss term (the loss is then the same).
    """
    chunk = micro.samples
    agg = config.ppo.loss_agg
    logp, mask, width, entropy = policy_response_logprobs(
        model, chunk, pad, device, entropy=True, entropy_grad=bool(config.entropy_coef)
    )
    old = pad_right_aligned(micro.old_logp, width)
    has_teacher = torch.tensor([row is not None for row in micro.teacher_logp], dtype=torch.float32)
    teacher = pad_right_aligned(
        [row if row is not None else torch.zeros(len(sample.response_ids)) for row, sample in zip(micro.teacher_logp, chunk)],
        width,
    )
    distill_mask = mask * has_teacher[:, None]

    # 1. the policy term
    if episodes is not None:
        terms = [episodes.loss_term(logp, old, mask, chunk)]
    else:
        advantage = method.token_advantages(micro.advantages, teacher, old, distill_mask)
        ppo = config.ppo
        clip = {"clip_low": ppo.clip_low, "clip_high": ppo.clip_high, "dual_clip": ppo.dual_clip, "agg": agg}
        if micro.proximal_logp is None:
            loss, ppo_metrics = algorithms.ppo_clip_loss(logp, old, advantage, mask, **clip)
        else:
            loss, ppo_metrics = algorithms.decoupled_ppo_loss(
                logp, pad_right_aligned(micro.proximal_logp, width), old, advantage, mask,
                behaviour_weight_cap=micro.behaviour_weight_cap, **clip,
            )
        ppo_metrics = {f"ppo/{k}": float(v) for k, v in ppo_metrics.items()}
        # |l - l_old|: before the first optimizer step l is the old policy recomputed by the trainer
        ppo_metrics["rollout/logprob_gap"] = float(algorithms.masked_mean((logp - old).abs().detach(), mask))
        terms = [LossTerm("ppo", loss, mask, ppo_metrics)]
    # 2. the method's own terms
    terms += method.extra_loss_terms(logp, teacher, distill_mask, agg)
    # 3. the entropy bonus, logged as losses/entropy (the aggregated entropy)
    if config.entropy_coef:
        terms.append(LossTerm("entropy", algorithms.aggregate_loss(entropy, mask, agg), mask, {}, coefficient=-config.entropy_coef))
    # 4. the KL to the reference (the start)
    kl_tokens = None
    if reference_rows is not None:
        reference = pad_right_aligned(reference_rows, width)
        kl_tokens = algorithms.kl_low_var(logp if config.kl_coef else logp.detach(), reference)
        if config.kl_coef:
            terms.append(LossTerm("kl", algorithms.aggregate_loss(kl_tokens, mask, agg), mask, {}, coefficient=config.kl_coef))
    # the run's health on the policy term (a term summed as it is, ESPO's, takes its token share)
    scale = episodes.token_share(mask) if episodes is not None else 1.0
    terms[0].metrics.update({key: scale * value for key, value in health_metrics(entropy, kl_tokens, mask).items()})
    return terms


def health_metrics(entropy: torch.Tensor, kl_tokens: torch.Tensor | None, mask: torch.Tensor) -> dict[str, float]:
    """``health/entropy`` (token mean of the policy's entropy over the chosen response
    tokens) and, with a reference, ``health/kl_to_start`` (token mean of the low-variance KL
    estimate to the starting policy): detached, logged whatever ``entropy_coef`` and
    ``kl_coef`` are, so a collapse or a drift shows in every run."""
    metrics = {"health/entropy": float(algorithms.masked_mean(entropy.detach(), mask))}
    if kl_tokens is not None:
        metrics["health/kl_to_start"] = float(algorithms.masked_mean(kl_tokens.detach(), mask))
    return metrics


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
    policy: Policy,
    reference_model,
    optimizer: torch.optim.Optimizer,
    batch: RolloutBatch,
    config: RLConfig,
    method: Method,
    generator: torch.Generator,
    parallel: DataParallel | None = None,
    minibatches: MinibatchOrder | None = None,
    objective: MinibatchObjective | None = None,
) -> dict[str, float]:
    """PPO epochs over mini-batches of ``batch``; returns the mean of every logged metric
    over the mini-batches that logged it (the method's metrics only over those where its
    term had tokens), ``rollout/logprob_gap`` (mean |l - l_old| over the chosen tokens of the
    first mini-batch, before any step: the recorded sampling-time log-probs against the
    trainer's recomputation, about 0 on CPU), and ``faults/skipped_updates``: mini-batches
    whose loss or gradient was not finite, skipped without a step (the weights and the
    optimizer state stay as they were).

    A mini-batch is one optimizer step. Its forward/backward passes run over micro-batches
    of at most ``config.micro_batch_tokens`` padded tokens (samples sorted by length), each
    term's loss weighted by its micro-batch's share of the term's aggregation count
    (``algorithms.aggregation_count``), so the accumulated gradient is the mini-batch's
    gradient while the activation memory is bounded by the budget, not the batch size.

    With ``parallel`` (one process of a ``torchrun`` learner, every rank given the same
    batch and generator state) each rank runs its stripe of every mini-batch under DDP;
    the step equals the one-process step up to float rounding (``data_parallel``). With
    ``batch.proximal_logp`` (asynchronous rollouts) ``batch.old_logp`` are the behaviour
    log-probs and the ppo term is ``algorithms.decoupled_ppo_loss``. ``minibatches`` cuts
    each epoch (default: shuffled samples; the schedule's, ``training.schedule``). With an
    ``objective`` (the schedule's: ESPO, ``training.espo_update``) each mini-batch first
    measures its episodes in a pass without gradient and the ppo term is the objective's.
    """
    model = policy.model
    pad = policy.tokenizer.pad_token_id
    if objective is not None:
        objective.check(method, parallel=parallel is not None)
    if config.kl_coef and reference_model is None:
        raise ValueError("training.rl.kl_coef is not 0 but no reference model was given")
    # the reference is always scored when given: the KL to the start is logged even at kl_coef 0
    reference = (
        ReferenceLogprobs(reference_model, batch.samples, config, pad, lazy=parallel is not None)
        if reference_model is not None else None
    )
    replica = parallel.wrap(model) if parallel is not None else model  # what the gradients flow through
    multiturn = is_multiturn(batch.samples)
    minibatches = minibatches or MinibatchOrder()
    model.train()
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    skipped = 0
    minibatch_count = 0
    for epoch in range(config.ppo_epochs):
        # plain shuffle, or whole episodes per mini-batch (``training.minibatches``): ODYSSE's sampler, and
        # always in the multi-turn layout, where an episode is one forward pass (``training.episode_batches``)
        batches = minibatches.split(batch.episode_ids, config.mini_batch_size, generator, multiturn=multiturn)
        minibatch_count += len(batches)
        for batch_number, members in enumerate(batches):
            metrics = minibatch_step(policy, replica, optimizer, batch, members, reference, config, method, parallel, objective)
            if metrics is None:
                skipped += 1
                continue
            if epoch or batch_number:  # only the first mini-batch still sees the weights that sampled
                metrics.pop("rollout/logprob_gap", None)
            for key, value in metrics.items():
                sums[key] = sums.get(key, 0.0) + value
                counts[key] = counts.get(key, 0) + 1
    model.eval()
    result = {**{key: value / counts[key] for key, value in sums.items()}, "faults/skipped_updates": float(skipped)}
    return {**result, **minibatches.metrics(minibatch_count, config.ppo_epochs)}


def minibatch_step(
    policy: Policy, replica, optimizer: torch.optim.Optimizer, batch: RolloutBatch, members: Sequence[int],
    reference: "ReferenceLogprobs | None", config: RLConfig, method: Method, parallel: DataParallel | None,
    objective: MinibatchObjective | None = None,
) -> dict[str, float] | None:
    """One optimizer step on the samples ``members``, accumulated over micro-batches through
    ``replica`` (the model, or its DDP wrapper); its metrics, or None when the loss or the
    gradient was not finite (no step taken)."""
    model = policy.model
    scale = parallel.gradient_scale if parallel is not None else 1.0
    lengths = [len(sample.input_ids) for sample in batch.samples]
    index = sorted(members, key=lambda i: lengths[i])
    chains = episode_chains(batch.samples, index) if is_multiturn(batch.samples) else None  # multi-turn: whole episodes
    plan = micro_batch_plan(parallel, index, lengths, config.micro_batch_tokens, chains=chains)
    totals = _aggregation_totals(batch, index, config)
    episodes = (
        objective.measure(
            replica, batch, index, plan, policy.tokenizer.pad_token_id, policy.device,
            std_normalize=config.std_normalize, clip_low=config.ppo.clip_low, clip_high=config.ppo.clip_high,
        )
        if objective is not None else None
    )
    optimizer.zero_grad(set_to_none=True)
    losses: dict[str, float] = {}
    coefficients: dict[str, float] = {}
    weighted: dict[str, float] = {}
    for number, (micro, weight) in enumerate(plan):
        with parallel.synchronised(replica, number == len(plan) - 1) if parallel else contextlib.nullcontext():
            terms = micro_batch_loss_terms(
                replica, batch.select(micro), policy.tokenizer.pad_token_id,
                reference.rows(micro) if reference is not None else None, config, method, policy.device, episodes,
            )
            total = torch.zeros(())
            for term in terms:
                share = weight if term.minibatch_share else (
                    weight * algorithms.aggregation_count(term.mask, config.ppo.loss_agg) / max(totals[term.rows], 1.0)
                )
                total = total + term.coefficient * share * term.loss
                losses[term.name] = losses.get(term.name, 0.0) + share * float(term.loss.detach())
                coefficients[term.name] = term.coefficient
                for key, value in term.metrics.items():  # token-weighted mean over the micro-batches
                    weighted[key] = weighted.get(key, 0.0) + share * value
            (total * scale).backward()
    if parallel is not None:  # each rank holds its part of every sum
        weighted, losses = parallel.sum_metrics(weighted), parallel.sum_metrics(losses)
        coefficients = _coefficients_over_ranks(parallel, coefficients)
    metrics = {**weighted, **(episodes.metrics() if episodes is not None else {})}
    for name, value in losses.items():
        metrics["kl/ref" if name == "kl" else f"losses/{name}"] = value
    metrics["losses/total"] = sum(coefficients[name] * value for name, value in losses.items())
    metrics["losses/grad_norm"] = float(
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], config.max_grad_norm)
    )
    if not (math.isfinite(metrics["losses/total"]) and math.isfinite(metrics["losses/grad_norm"])):
        optimizer.zero_grad(set_to_none=True)  # a NaN or inf loss or gradient: weights and optimizer state unchanged
        logger.warning("RL mini-batch skipped: loss %s, gradient norm %s", metrics["losses/total"], metrics["losses/grad_norm"])
        return None
    optimizer.step()
    return metrics


def _coefficients_over_ranks(parallel: DataParallel, coefficients: dict[str, float]) -> dict[str, float]:
    """Each term's coefficient on every rank, also for a term only some ranks computed
    (SEED's distillation, on the ranks whose stripes hold distilled samples): the mean over
    the ranks that have it (one value per term, so the mean is that value)."""
    sums = parallel.sum_metrics(coefficients)
    counts = parallel.sum_metrics({name: 1.0 for name in coefficients})
    return {name: sums[name] / counts[name] for name in sums}


def _aggregation_totals(batch: RolloutBatch, index: Sequence[int], config: RLConfig) -> dict[str, float]:
    """Each loss term's aggregation count over the whole mini-batch, by the samples it
    covers (``loss_terms.ROWS``): every response, or the responses with a teacher; forced
    tokens left out, one row per sample."""
    samples = batch.samples

    def count(rows: list[int]) -> float:
        mask = torch.zeros(len(rows), max((len(samples[i].response_ids) for i in rows), default=0))
        for row, i in enumerate(rows):
            mask[row, : len(samples[i].response_ids)] = torch.tensor(samples[i].choice_positions, dtype=torch.float32)
        return algorithms.aggregation_count(mask, config.ppo.loss_agg)

    return {"all": count(list(index)), "distilled": count([i for i in index if batch.teacher_logp[i] is not None])}

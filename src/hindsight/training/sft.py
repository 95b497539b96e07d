"""Supervised fine-tuning on (prompt, response) pairs: behaviour cloning, skill-conditioned
behaviour cloning and analyzer SFT all go through this one loop.

The loss is the token-mean negative log-likelihood of the response tokens (the prompt is
context only). Examples are bucketed by length so that a batch wastes little padding, which
matters on a CPU where every padded token costs as much as a real one. A batch runs as
micro-batches within a padded-token budget (gradients accumulated, same loss). AdamW with
linear warm-up and cosine decay; gradient accumulation; bf16 autocast where the device does
bf16 natively (about 2x on a CPU with AVX512-BF16, batch lengths then padded to a multiple
of 64 so that few oneDNN kernels are built and cached); a wall-clock budget that ends
training early, the schedule then following the elapsed fraction of that budget, so a run
cut by time still anneals (the history records where it stopped).

Multi-turn examples (``training.episode_sft``: rows with a ``header``, given with the
rollout's ``TurnBudget``) train on whole-episode sequences, the loss on every turn's action
ids + EOS; each such sequence counts as one example of a batch, and the token mean runs over
all loss tokens of the batch, pairs and sequences alike. Without them every step below is the
step-wise one, unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pandas as pd
import torch

from hindsight.policy import Policy
from hindsight.policy.encoding import StepSample, collate
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.model import has_native_bf16
from hindsight.policy.vision import screen_image
from hindsight.training.data_parallel import DataParallel, micro_batch_plan
from hindsight.training.episode_sft import EpisodeSequence, TurnBudget, encode_examples, sequence_nll
from hindsight.training.example_screens import example_screens
from hindsight.training.sft_config import SFTConfig

logger = logging.getLogger(__name__)


SFT_HISTORY_COLUMNS = ("step", "loss", "lr", "tokens_per_s", "elapsed_s")
"""The columns of ``train_sft``'s history (one row per logged step)."""


def _length_bucketed_batches(lengths: Sequence[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffle, then sort inside windows of 50 batches by length, then shuffle the batches."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    window = batch_size * 50
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda i: lengths[i])
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def cosine_schedule(step: int, total: int, warmup: int, min_ratio: float) -> float:
    """Learning-rate multiplier: linear warm-up to 1, cosine decay to ``min_ratio``."""
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def response_nll(model, batch) -> tuple[torch.Tensor, int]:
    """Token-mean negative log-likelihood of the response tokens, and their count."""
    logp = token_logprobs(model, batch)
    mask = batch.response_mask.to(logp.dtype)
    count = int(mask.sum().item())
    return -(logp * mask).sum() / max(count, 1), count


def _loss_tokens(unit: StepSample | EpisodeSequence) -> int:
    """Tokens of one example that carry the loss."""
    return unit.loss_tokens if isinstance(unit, EpisodeSequence) else len(unit.response_ids)


def _by_layout(units: Sequence[StepSample | EpisodeSequence], members: list[int]) -> list[list[int]]:
    """A batch's members split into (prompt, response) pairs and multi-turn sequences
    (each group runs its own micro-batches); all of them as one group when there is no
    sequence."""
    sequences = [i for i in members if isinstance(units[i], EpisodeSequence)]
    if not sequences:
        return [members]
    pairs = [i for i in members if not isinstance(units[i], EpisodeSequence)]
    return [group for group in (pairs, sequences) if group]


def _micro_batch_nll(model, units: Sequence[StepSample | EpisodeSequence], pad_token_id: int, pad_multiple: int | None, device):
    """(token-mean NLL, loss tokens, real tokens) of one micro-batch of a single layout."""
    if isinstance(units[0], EpisodeSequence):
        loss, count = sequence_nll(model, units, pad_token_id, pad_multiple)
        return loss, count, sum(len(unit.input_ids) for unit in units)
    batch = collate(units, pad_token_id=pad_token_id, pad_to_multiple_of=pad_multiple).to(device)
    loss, count = response_nll(model, batch)
    return loss, count, batch.attention_mask.sum().item()


def train_sft(
    policy: Policy,
    examples: pd.DataFrame,
    config: SFTConfig,
    log_metrics: Callable[[dict, int], None] | None = None,
    seed: int = 0,
    parallel: DataParallel | None = None,
    turns: TurnBudget | None = None,
    screens: pd.DataFrame | None = None,
    screens_origin: str = "screenshots",
) -> pd.DataFrame:
    """Fine-tune ``policy.model`` in place on ``examples`` (columns ``prompt``, ``response``).

    Args:
        policy: A ``hindsight.policy.Policy`` (its model is trained in place).
        examples: One row per example; an optional ``kind`` column names its family
            (bc / skill_bc / analyzer) and is reported in the history; for a vision policy
            each step row's ``episode_id`` and ``step`` key its screen in ``screens``.
        config: Training settings.
        log_metrics: Called as ``log_metrics(metrics, step)`` every ``log_every`` steps.
        seed: Seed of the example order.
        parallel: One process of a ``torchrun`` learner: every rank reads the same
            examples and seed and runs its stripe of each batch under DDP (the steps equal
            the one-process ones up to float rounding); rank 0 alone logs.
        turns: The rollout's context budget (``TurnBudget.of(project.rollout.sampling)``), needed
            when ``examples`` hold multi-turn rows (``episode_sft``; their context is built
            by the engine's rule, not cut to ``config.max_length``).
        screens: The screenshot table of the examples' steps (the catalog's ``screenshots``,
            ``hindsight.data.screenshots``), read for a vision policy only: each step example's
            screen is joined in when its sample is built (``training.example_screens``); a
            step without one is refused. A text policy ignores it.
        screens_origin: The name of ``screens`` in the error messages.

    Returns:
        The history: one row per logged step (step, loss, lr, tokens_per_s, elapsed_s).
    """
    if examples.empty:
        raise ValueError("SFT got no examples")
    run = _prepare_run(policy, examples, config, seed, parallel, turns, screens, screens_origin)
    run.model.train()

    history: list[dict] = []
    batches: list[list[int]] = []
    started = time.perf_counter()
    window = _LogWindow(start=started)
    step = 0
    while step < run.total_steps:
        lr = _scheduled_lr(step, started, run, config, parallel)
        for group in run.optimizer.param_groups:
            group["lr"] = lr
        _optimizer_step(run, batches, window, config, parallel)
        step += 1
        elapsed = time.perf_counter() - started
        out_of_time = _out_of_time(elapsed, config, parallel)
        if step % config.log_every == 0 or step == run.total_steps or out_of_time:
            _log_window(window, history, step, run.total_steps, lr, elapsed, log_metrics, parallel)
        if out_of_time:
            logger.info("SFT stopped by its time budget after %d of %d steps", step, run.total_steps)
            break
    run.model.eval()
    return pd.DataFrame(history, columns=list(SFT_HISTORY_COLUMNS))


@dataclass
class _SFTRun:
    """What one SFT run fixes before its first step: the model, the encoded examples and
    their lengths, the step counts, the optimizer, the example-order RNG and the precision."""

    model: Any
    tokenizer: Any
    encoded: list[StepSample | EpisodeSequence]
    lengths: list[int]
    padded_lengths: list[int]
    """The lengths the micro-batch budget counts (padded to ``pad_multiple`` under bf16)."""
    total_steps: int
    warmup: int
    trainable: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    rng: random.Random
    device: torch.device
    use_bf16: bool
    pad_multiple: int | None
    replica: Any
    """What the gradients flow through (the DDP wrapper under ``parallel``, else the model)."""
    scale: float


@dataclass
class _LogWindow:
    """Sums over the optimizer steps since the last logged one."""

    start: float
    tokens: int = 0
    loss: float = 0.0
    micro: int = 0

    def reset(self, now: float) -> None:
        """Start a new window at ``now``."""
        self.tokens, self.start, self.loss, self.micro = 0, now, 0.0, 0


def _example_images(policy: Policy, examples: pd.DataFrame, screens: pd.DataFrame | None, origin: str) -> list | None:
    """Per example, its screen as the vision policy's model reads it (one ``ScreenImage`` per
    step screen, shared by the rows of that step); None for a text policy."""
    if policy.vision is None:
        return None
    images: dict[int, object] = {}
    out = []
    for array in example_screens(examples, screens, origin):
        if array is not None and id(array) not in images:
            images[id(array)] = screen_image(policy, array)
        out.append(None if array is None else images[id(array)])
    return out


def _prepare_run(
    policy: Policy, examples: pd.DataFrame, config: SFTConfig, seed: int, parallel: DataParallel | None, turns: TurnBudget | None,
    screens: pd.DataFrame | None = None, screens_origin: str = "screenshots",
) -> _SFTRun:
    """Encode the examples (a vision policy's with their screens), derive the step counts,
    build the optimizer and choose the precision of the run."""
    model, tokenizer = policy.model, policy.tokenizer
    images = _example_images(policy, examples, screens, screens_origin)
    encoded = encode_examples(tokenizer, examples, config.max_length, turns, images)
    lengths = [len(sample.input_ids) for sample in encoded]
    micro_per_epoch = math.ceil(len(encoded) / config.batch_size)
    total_steps = config.max_steps or max(1, int(config.epochs * micro_per_epoch / config.grad_accum_steps))
    warmup = int(config.warmup_ratio * total_steps)

    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate, weight_decay=config.weight_decay)
    rng = random.Random(seed)
    device = next(model.parameters()).device
    use_bf16 = has_native_bf16(device) if config.bf16_autocast == "auto" else config.bf16_autocast
    logger.info("SFT on %s, %s", device, "bf16 autocast" if use_bf16 else "float32")
    pad_multiple = 64 if use_bf16 else None  # the micro-batch budget counts the padded lengths
    padded_lengths = [-(-length // pad_multiple) * pad_multiple for length in lengths] if pad_multiple else lengths
    replica = parallel.wrap(model) if parallel is not None else model  # what the gradients flow through
    scale = parallel.gradient_scale if parallel is not None else 1.0
    return _SFTRun(
        model=model, tokenizer=tokenizer, encoded=encoded, lengths=lengths, padded_lengths=padded_lengths,
        total_steps=total_steps, warmup=warmup, trainable=trainable, optimizer=optimizer, rng=rng, device=device,
        use_bf16=use_bf16, pad_multiple=pad_multiple, replica=replica, scale=scale,
    )


def _scheduled_lr(step: int, started: float, run: _SFTRun, config: SFTConfig, parallel: DataParallel | None) -> float:
    """The learning rate of the next optimizer step."""
    # Schedule progress is the larger of the step and the time-budget fractions, so a run
    # cut by its time budget still anneals to the end of its cosine.
    progress_step = step
    if config.time_budget_s:
        elapsed_fraction = (time.perf_counter() - started) / config.time_budget_s
        progress_step = max(step, int(elapsed_fraction * run.total_steps))
        if parallel is not None:  # one clock decides for every rank
            progress_step = parallel.same(progress_step)
    return config.learning_rate * cosine_schedule(progress_step, run.total_steps, run.warmup, config.min_lr_ratio)


def _optimizer_step(
    run: _SFTRun, batches: list[list[int]], window: _LogWindow, config: SFTConfig, parallel: DataParallel | None
) -> None:
    """One optimizer step over ``grad_accum_steps`` batches, taken from ``batches`` (refilled
    with a fresh length-bucketed epoch order when empty); adds to ``window``'s sums."""
    run.optimizer.zero_grad(set_to_none=True)
    for _ in range(config.grad_accum_steps):
        if not batches:
            batches.extend(_length_bucketed_batches(run.lengths, config.batch_size, run.rng))
        members = batches.pop()
        loss_value = _batch_backward(run, members, window, config, parallel)
        window.loss += loss_value
        window.micro += 1
    torch.nn.utils.clip_grad_norm_(run.trainable, config.max_grad_norm)
    run.optimizer.step()


def _batch_backward(
    run: _SFTRun, members: list[int], window: _LogWindow, config: SFTConfig, parallel: DataParallel | None
) -> float:
    """Forward and backward passes of one batch as micro-batches (gradients accumulated, each
    weighted to a token mean over the whole batch); adds the real tokens to ``window`` and
    returns the batch's loss."""
    response_tokens = sum(_loss_tokens(run.encoded[i]) for i in members)
    loss_value = 0.0
    for group in _by_layout(run.encoded, members):
        order = sorted(group, key=lambda i: run.padded_lengths[i])
        plan = micro_batch_plan(parallel, order, run.padded_lengths, config.micro_batch_tokens)
        for number, (part, weight) in enumerate(plan):
            units = [run.encoded[i] for i in part]
            with parallel.synchronised(run.replica, number == len(plan) - 1) if parallel else contextlib.nullcontext():
                with torch.autocast(device_type=run.device.type, dtype=torch.bfloat16, enabled=run.use_bf16):
                    loss, count, tokens = _micro_batch_nll(run.replica, units, run.tokenizer.pad_token_id, run.pad_multiple, run.device)
                share = weight * count / max(response_tokens, 1)  # token-mean over the whole batch
                (loss * share * run.scale / config.grad_accum_steps).backward()
            window.tokens += int(weight * tokens)
            loss_value += float(loss.item()) * share
    return loss_value


def _out_of_time(elapsed: float, config: SFTConfig, parallel: DataParallel | None) -> bool:
    """Whether the time budget is spent (one rank's clock decides for all under ``parallel``)."""
    out_of_time = config.time_budget_s is not None and elapsed >= config.time_budget_s
    if parallel is not None and config.time_budget_s is not None:
        out_of_time = parallel.same(out_of_time)
    return out_of_time


def _log_window(
    window: _LogWindow,
    history: list[dict],
    step: int,
    total_steps: int,
    lr: float,
    elapsed: float,
    log_metrics: Callable[[dict, int], None] | None,
    parallel: DataParallel | None,
) -> None:
    """Record the window's metrics in ``history``, hand them to ``log_metrics`` (the writer
    rank only) and the log, and start a new window."""
    now = time.perf_counter()
    if parallel is not None:  # each rank holds its part of the window's sums
        sums = parallel.sum_metrics({"loss": window.loss, "tokens": float(window.tokens)})
        window.loss, window.tokens = sums["loss"], int(sums["tokens"])
    metrics = {
        "loss": window.loss / max(window.micro, 1),
        "lr": lr,
        "tokens_per_s": window.tokens / max(now - window.start, 1e-9),
        "elapsed_s": elapsed,
    }
    history.append({"step": step, **metrics})
    if log_metrics and (parallel is None or parallel.is_writer):
        log_metrics(metrics, step)
    logger.info("sft step %d/%d loss %.4f lr %.2e %.0f tok/s", step, total_steps, metrics["loss"], metrics["lr"], metrics["tokens_per_s"])
    window.reset(now)

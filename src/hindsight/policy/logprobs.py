"""Per-token log-probabilities of the response tokens of a ``TokenBatch``.

``token_logprobs`` is THE log-prob of the project: the rollout engine records it while
sampling (old log-probs), the scorer computes it under plain and skill-augmented prompts,
the trainer differentiates it. All of them describe the same quantity:

- temperature 1 always. The actor may SAMPLE at temperature T (0.4 by default), but what it
  records is the policy's own distribution at T=1, the same thing the trainer recomputes;
  the PPO ratio compares like with like.
- restricted when the batch carries ``allowed_ids`` (constrained decoding): the log-softmax
  is renormalised over the allowed ids of each position (a gather of A logits and a
  logsumexp over them, never a [B, L, V] mask: real LLMs have 150k-token vocabularies). A
  response position whose allowed row is all -1 is unrestricted (plain log-softmax).

``token_logprobs_and_entropy`` adds, from the same forward pass, the entropy of that same
distribution at each response position (``training.rl.entropy_coef``'s bonus).

Only the last ``max response length + 1`` positions are pushed through the LM head
(``logits_to_keep``): with left padding every response ends at the last column, and the
prompt's logits are never needed. Positions follow ``TokenBatch.position_ids`` (counted from
each row's first real token), as in generation, so the two agree to float precision. A batch
with screenshots (vision policies) also passes their pixel inputs, and the model's own 3-D
positions where it has multimodal rotary positions (``screens.image_forward_inputs``).
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass

import torch

from hindsight.policy.encoding import TokenBatch
from hindsight.policy.screens import image_forward_inputs

logger = logging.getLogger(__name__)

LOGPROB_TEMPERATURE = 1.0
"""The temperature every log-prob of the project is taken at (the logits as they are): RL's
rollouts sample at ``rollout.sampling.temperature``, and only when the two are equal are the
PPO ratio and the distillation target on-policy (``config.rl.rl_setup`` warns otherwise)."""


@dataclass
class CachedPrefix:
    """Key/value entries already computed for the ids that come before a batch's rows
    (``policy.prefix_scoring``): the batch's ids are read over them."""

    cache: object
    """A transformers cache holding [B, heads, W, dim] entries per layer, left-padded."""
    attention: torch.Tensor
    """[B, W] 1 on each row's real prefix entries."""
    lengths: torch.Tensor
    """[B] each row's real prefix length (the position of its first batch id)."""


def accepts_logits_to_keep(model) -> bool:
    """Whether the (base) model's forward takes ``logits_to_keep`` (HF causal LMs do)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "logits_to_keep" in inspect.signature(base.forward).parameters


def response_logits(model, batch: TokenBatch, prefix: CachedPrefix | None = None) -> tuple[torch.Tensor, int]:
    """Logits predicting the last R tokens of every row, R = the longest response.

    Args:
        model: A causal LM (HF or peft), on the batch's device.
        batch: The left-padded batch.
        prefix: Entries of ids that precede each row (read over them; positions continue
            from each row's prefix length). None: the rows start at position 0.

    Returns:
        (logits [B, R, V] where logits[:, j] predicts input_ids[:, L - R + j], R).
    """
    length = batch.input_ids.shape[1]
    span = max(min(batch.response_width, length - 1), 1)
    kwargs = {"logits_to_keep": span + 1} if accepts_logits_to_keep(model) else {}
    attention, positions = batch.attention_mask, batch.position_ids
    if prefix is not None:
        attention = torch.cat([prefix.attention, attention], dim=1)
        positions = positions + prefix.lengths.unsqueeze(-1)
        kwargs["past_key_values"] = prefix.cache
    if batch.images is not None:
        if prefix is not None:
            raise ValueError("response_logits: rows with screenshots are read whole, never over a cached prefix")
        pixels, positions = image_forward_inputs(model, batch.input_ids, attention, positions, batch.images)
        kwargs.update(pixels)
    output = model(
        input_ids=batch.input_ids,
        attention_mask=attention,
        position_ids=positions,
        use_cache=prefix is not None,
        **kwargs,
    )
    logits = output.logits[:, -(span + 1) : -1]
    return logits, span


def token_logprobs(model, batch: TokenBatch, prefix: CachedPrefix | None = None) -> torch.Tensor:
    """Log-prob of the token at each position, predicted from the position before.

    Args:
        model: A causal LM (HF or peft). Works with and without ``torch.no_grad``.
        batch: The batch (moved to the model's device here).
        prefix: Cached entries of ids preceding each row (``response_logits``).

    Returns:
        Float32 [B, L]: log pi(token_t | tokens_<t) at T=1, restricted to
        ``batch.allowed_ids`` where given; 0 outside ``response_mask``.
    """
    return _response_scores(model, batch, prefix, entropy=False)[0]


def token_logprobs_and_entropy(
    model, batch: TokenBatch, prefix: CachedPrefix | None = None, entropy_grad: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """``token_logprobs`` and, from the same forward pass, the entropy of the distribution
    each log-prob is drawn from (restricted to the position's allowed ids where given,
    ``restricted_entropy``): two float32 [B, L] tensors, 0 outside ``response_mask``. Without
    ``entropy_grad`` the entropy is computed without gradient (a metric only: no graph kept
    over the vocabulary)."""
    return _response_scores(model, batch, prefix, entropy=True, entropy_grad=entropy_grad)  # type: ignore[return-value]


def restricted_entropy(logits: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    """Entropy ``-sum_a p(a) log p(a)`` of the distribution ``token_logprobs`` describes at
    each position: softmax over the whole vocabulary, or over the position's allowed ids
    where ``allowed`` (``[..., A]`` ids, -1 padding) has any. Differentiable; finite
    gradients also through the padding.

    Args:
        logits: [..., V] float logits.
        allowed: [..., A] allowed ids (-1: padding; a row of -1 is unrestricted) or None.

    Returns:
        [...] entropies.
    """
    if allowed is None:
        return _entropy(logits, None)
    restricted = (allowed >= 0).any(dim=-1)
    # padding ids get -inf only on restricted rows; an all -1 row stays finite (and is replaced)
    padding = (allowed < 0) & restricted.unsqueeze(-1)
    inside = _entropy(torch.gather(logits, -1, allowed.clamp(min=0)), padding)
    if bool(restricted.all()):
        return inside
    return torch.where(restricted, inside, _entropy(logits, None))


ENTROPY_CHUNK_POSITIONS = 1024
"""Positions per chunk of ``detached_entropy``: bounds its temporaries to a few
[1024, vocabulary] tensors whatever the micro-batch."""


@torch.no_grad()
def detached_entropy(logits: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    """``restricted_entropy`` as a metric: without gradient, over chunks of the leading axis
    of about ``ENTROPY_CHUNK_POSITIONS`` positions each, so that measuring it in every update
    adds no graph and little memory over the vocabulary.

    Args:
        logits: [N, ..., V] float logits.
        allowed: [N, ..., A] allowed ids (``restricted_entropy``) or None.
    """
    logits = logits.detach()
    if not len(logits):
        return restricted_entropy(logits, allowed)
    positions = max(1, logits[0].numel() // logits.shape[-1])
    step = max(1, ENTROPY_CHUNK_POSITIONS // positions)
    return torch.cat([
        restricted_entropy(logits[i : i + step], allowed[i : i + step] if allowed is not None else None)
        for i in range(0, len(logits), step)
    ])


def _entropy(logits: torch.Tensor, padding: torch.Tensor | None) -> torch.Tensor:
    """``-sum p log p`` of ``softmax(logits)`` over the last axis, ``padding`` entries left
    out (probability 0, no term)."""
    if padding is None:
        logp = torch.log_softmax(logits, dim=-1)
        return -(logp.exp() * logp).sum(dim=-1)
    logp = torch.log_softmax(logits.masked_fill(padding, float("-inf")), dim=-1).masked_fill(padding, 0.0)
    return -(logp.exp().masked_fill(padding, 0.0) * logp).sum(dim=-1)


def _response_scores(
    model, batch: TokenBatch, prefix: CachedPrefix | None, *, entropy: bool, entropy_grad: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(log-probs [B, L], entropies [B, L] or None): one forward pass (``token_logprobs``)."""
    device = next(model.parameters()).device
    batch = batch.to(device)
    logits, span = response_logits(model, batch, prefix)
    logits = logits.float()
    targets = batch.input_ids[:, -span:]
    mask = batch.response_mask[:, -span:].bool()
    target_logits = torch.gather(logits, -1, targets.unsqueeze(-1)).squeeze(-1)
    allowed = batch.allowed_ids[:, -span:, :] if batch.allowed_ids is not None else None

    if allowed is None:
        normaliser = torch.logsumexp(logits, dim=-1)
    else:
        restricted = (allowed >= 0).any(dim=-1)
        allowed_logits = torch.gather(logits, -1, allowed.clamp(min=0))
        # Padding ids get -inf only on restricted positions: an all -1 row must stay finite,
        # or the logsumexp backward would turn a zero gradient into NaN.
        padding = (allowed < 0) & restricted.unsqueeze(-1)
        normaliser = torch.logsumexp(allowed_logits.masked_fill(padding, float("-inf")), dim=-1)
        if bool((mask & ~restricted).any()):
            normaliser = torch.where(restricted, normaliser, torch.logsumexp(logits, dim=-1))

    logprobs = torch.where(mask, target_logits - normaliser, torch.zeros_like(target_logits))
    full = torch.zeros(batch.input_ids.shape, dtype=logprobs.dtype, device=device)
    entropies = None
    if entropy:
        values = restricted_entropy(logits, allowed) if entropy_grad else detached_entropy(logits, allowed)
        response_entropy = torch.where(mask, values, torch.zeros_like(target_logits))
        entropies = torch.cat([full[:, :-span], response_entropy], dim=1)
    return torch.cat([full[:, :-span], logprobs], dim=1), entropies

"""Sink-aware FlexAttention for models with learned per-head attention sinks (gpt-oss).

A sink is one extra logit ``s_h`` per head in the softmax denominator that no key holds and
that carries no value, so a query can put weight "nowhere":
``p_ij = exp(z_ij) / (sum_k exp(z_ik) + exp(s_h))``. It cannot be a FlexAttention ``score_mod``
(a score_mod only changes existing scores), so it is folded in afterwards from the
log-sum-exp FlexAttention returns: with ``lse_i = log sum_k exp(z_ik)``,
``out_i = flex_out_i * exp(lse_i) / (exp(lse_i) + exp(s_h)) = flex_out_i * sigmoid(lse_i - s_h)``.

Devices:

- CUDA: compiled ``flex_attention`` (fused, the score matrix is never materialised) and its own
  backward; the fold is ordinary differentiable tensor maths.
- CPU: torch's ``flex_attention`` has no backward on CPU (and its compiled CPU kernel returns no
  log-sum-exp), so ``_SinkFlexCPU`` runs the unfused FlexAttention forward one query chunk at a
  time (``QUERY_CHUNK`` rows against all keys, each chunk with its own BlockMask) and our own
  backward, recomputing the probabilities chunk by chunk from saved q, k, v, out and the
  sink-inclusive log-sum-exp, restricted by the same mask rule (``sink_mask.dense_rows``).

Importing this module registers ``SINK_FLEX_ATTENTION`` ("sink_flex_attention") with
transformers' attention and mask registries, so
``AutoModelForCausalLM.from_config(cfg, attn_implementation="sink_flex_attention")`` works.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch.nn.attention.flex_attention import AuxRequest, flex_attention
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface

from hindsight.policy.sink_mask import (
    SinkMaskSpec,
    block_mask,
    dense_rows,
    query_chunk,
    sink_mask_spec,
    spec_for_unmasked,
)

SINK_FLEX_ATTENTION = "sink_flex_attention"
QUERY_CHUNK = 256
"""Query rows per chunk on CPU, forward and backward: bounds the scores held to chunk x keys per head."""

_compiled_flex: Any = None


def _flex_cuda() -> Any:
    global _compiled_flex
    if _compiled_flex is None:
        _compiled_flex = torch.compile(flex_attention)  # recompiles as dynamic once a length changes
    return _compiled_flex


def _flex_with_lse(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, spec: SinkMaskSpec,
                   window: int | None, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """FlexAttention output and its float32 log-sum-exp (``-inf`` on rows that see no key)."""
    run = _flex_cuda() if query.device.type == "cuda" else flex_attention
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*flex_attention.*compile.*")
        out, aux = run(query, key, value, block_mask=block_mask(spec, window), scale=scale, enable_gqa=True,
                       return_aux=AuxRequest(lse=True))
    return out, aux.lse


def _fold_factor(lse: torch.Tensor, sinks: torch.Tensor | None) -> torch.Tensor:
    """``exp(lse) / (exp(lse) + exp(s_h))`` as ``[B, H, Q, 1]`` (1 without sinks)."""
    if sinks is None:
        return torch.ones_like(lse).unsqueeze(-1)
    return torch.sigmoid(lse - sinks.float().view(1, -1, 1)).unsqueeze(-1)


def _chunk_bounds(length: int) -> list[tuple[int, int]]:
    return [(start, min(start + QUERY_CHUNK, length)) for start in range(0, length, QUERY_CHUNK)]


class _SinkFlexCPU(torch.autograd.Function):
    """Sink-aware attention on CPU: FlexAttention forward, our own chunked backward."""

    @staticmethod
    def forward(ctx: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, sinks: torch.Tensor | None,
                spec: SinkMaskSpec, window: int | None, scale: float) -> torch.Tensor:
        q, k, v = (t.detach().float() for t in (query, key, value))
        chunks = [_flex_with_lse(q[:, :, start:stop], k, v, query_chunk(spec, start, stop), window, scale)
                  for start, stop in _chunk_bounds(q.shape[2])]
        flex_out = torch.cat([chunk_out for chunk_out, _ in chunks], dim=2)
        lse = torch.cat([chunk_lse for _, chunk_lse in chunks], dim=2)
        out = flex_out * _fold_factor(lse, sinks)
        # The sink-inclusive log-normaliser: p_ij = exp(z_ij - total_lse_i); sinks only on rows that see keys.
        total = lse if sinks is None else torch.logaddexp(lse, sinks.float().view(1, -1, 1))
        ctx.save_for_backward(q, k, v, out, total, sinks if sinks is not None else torch.empty(0))
        ctx.has_sinks, ctx.spec, ctx.window, ctx.scale = sinks is not None, spec, window, scale
        ctx.dtypes = (query.dtype, key.dtype, value.dtype)
        return out.to(query.dtype)

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        q, k, v, out, total, sinks = ctx.saved_tensors
        grad_q, grad_k, grad_v, row_dot = _attention_backward(q, k, v, out, total, grad_out.float(), ctx.spec,
                                                              ctx.window, ctx.scale)
        grad_sinks = None
        if ctx.has_sinks:  # d s_h = -sum_i exp(s_h - total_i) D_i (the sink's value is zero)
            sink_share = torch.exp(sinks.float().view(1, -1, 1) - total)
            grad_sinks = -(sink_share * row_dot).sum(dim=(0, 2)).to(sinks.dtype)
        q_dtype, k_dtype, v_dtype = ctx.dtypes
        return grad_q.to(q_dtype), grad_k.to(k_dtype), grad_v.to(v_dtype), grad_sinks, None, None, None


def _attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, total: torch.Tensor,
                        grad_out: torch.Tensor, spec: SinkMaskSpec, window: int | None,
                        scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Softmax-attention backward with the sink logit as one more (value-less) column.

    With ``p = exp(z - total)`` (zero where masked) and ``D_i = sum_d dO_id O_id``:
    ``dZ = p * (dO V^T - D)``, ``dQ = scale dZ K``, ``dK = scale dZ^T Q``, ``dV = p^T dO``.
    Returns those three (K and V summed over each GQA group) and ``D`` for the sink's gradient.
    """
    group = q.shape[1] // k.shape[1]
    k_full = k.repeat_interleave(group, dim=1)
    v_full = v.repeat_interleave(group, dim=1)
    grad_q = torch.zeros_like(q)
    grad_k = torch.zeros_like(k_full)
    grad_v = torch.zeros_like(v_full)
    row_dot = (grad_out * out).sum(-1)  # D, [B, H, Q]
    for start, stop in _chunk_bounds(q.shape[2]):
        q_c, d_out = q[:, :, start:stop], grad_out[:, :, start:stop]
        seen = dense_rows(spec, window, start, stop)
        logits = torch.matmul(q_c, k_full.transpose(-1, -2)) * scale
        total_c = total[:, :, start:stop].unsqueeze(-1)
        probs = torch.where(seen, torch.exp(logits - torch.where(torch.isfinite(total_c), total_c, 0.0)), 0.0)
        grad_logits = probs * (torch.matmul(d_out, v_full.transpose(-1, -2)) - row_dot[:, :, start:stop, None])
        grad_q[:, :, start:stop] = torch.matmul(grad_logits, k_full) * scale
        grad_k += torch.matmul(grad_logits.transpose(-1, -2), q_c) * scale
        grad_v += torch.matmul(probs.transpose(-1, -2), d_out)
    batch, kv_heads = k.shape[0], k.shape[1]
    grad_k = grad_k.view(batch, kv_heads, group, *k.shape[2:]).sum(2)
    grad_v = grad_v.view(batch, kv_heads, group, *v.shape[2:]).sum(2)
    return grad_q, grad_k, grad_v, row_dot


def sink_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, sinks: torch.Tensor | None,
                   spec: SinkMaskSpec, window: int | None, scale: float, fold_sink: bool = True) -> torch.Tensor:
    """Sink-aware attention ``[B, Hq, Q, D]`` from query ``[B, Hq, Q, D]``, key/value ``[B, Hkv, K, D]``.

    Args:
        sinks: Per-head sink logits ``[Hq]``, or None for plain softmax attention.
        spec: Which keys each query sees (``sink_mask``).
        window: The sliding window in tokens, None for full causal attention.
        scale: The logit scale (``head_dim ** -0.5`` for gpt-oss).
        fold_sink: False drops the sink (the tests use it to show the sink matters).
    """
    sinks = sinks if fold_sink else None
    if query.device.type == "cpu":
        return _SinkFlexCPU.apply(query, key, value, sinks, spec, window, scale)
    flex_out, lse = _flex_with_lse(query, key, value, spec, window, scale)
    return (flex_out.float() * _fold_factor(lse, sinks)).to(query.dtype)


def sink_flex_attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                attention_mask: SinkMaskSpec | None, scaling: float | None = None,
                                dropout: float = 0.0, sliding_window: int | None = None,
                                s_aux: torch.Tensor | None = None, **_: Any) -> tuple[torch.Tensor, None]:
    """transformers' attention-interface entry point; returns ``([B, Q, Hq, D], None)``."""
    if dropout > 0:
        raise ValueError(f"{SINK_FLEX_ATTENTION} does not support attention dropout: set the model config's "
                         "`attention_dropout` to 0.")
    if isinstance(attention_mask, torch.Tensor):
        raise ValueError(f"{SINK_FLEX_ATTENTION} builds its own masks; pass a 2D attention mask to the model, "
                         "not a prepared 4D one.")
    spec = attention_mask or spec_for_unmasked(query.shape[0], query.shape[2], key.shape[2], query.device)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    out = sink_attention(query, key, value, s_aux, spec, sliding_window, scale)
    return out.transpose(1, 2).contiguous(), None


def register_sink_flex_attention() -> None:
    """Register the attention and mask functions under ``SINK_FLEX_ATTENTION`` (idempotent)."""
    AttentionInterface.register(SINK_FLEX_ATTENTION, sink_flex_attention_forward)
    AttentionMaskInterface.register(SINK_FLEX_ATTENTION, sink_mask_spec)


register_sink_flex_attention()

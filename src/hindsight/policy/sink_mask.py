"""Masks for the sink-aware FlexAttention: one description per forward pass, BlockMasks per window.

transformers asks the registered *mask function* for one mask per layer type (full and sliding
window) before running the decoder layers. Ours returns a ``SinkMaskSpec``: the sizes and offsets
of the query and key blocks plus the 2D padding mask. The attention function turns it into a
FlexAttention ``BlockMask`` for the layer's own window (``block_mask``), and the CPU backward
reads the same rule densely, one query chunk at a time (``dense_rows``), so the forward and the
backward can never disagree on which keys a query sees.

The rule (positions are absolute token positions, so KV-cache decoding works unchanged):
query ``i`` at position ``q_offset + i`` sees key ``j`` at position ``kv_offset + j`` iff
``kv_pos <= q_pos`` (causal), ``q_pos - kv_pos < window`` when the layer has a window (the same
convention as transformers' sliding layers: the query and ``window - 1`` keys before it), and the
key is not padding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.nn.attention.flex_attention import BlockMask, create_block_mask

MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class SinkMaskSpec:
    """Which keys each query may see, for one forward pass (shared by the layers of one type)."""

    batch_size: int
    """Rows in the batch."""
    q_length: int
    """Queries in this forward pass."""
    kv_length: int
    """Keys the attention receives (cache plus new tokens, or the sliding cache's slice)."""
    q_offset: int | torch.Tensor = 0
    """Absolute position of the first query."""
    kv_offset: int | torch.Tensor = 0
    """Absolute position of the first key."""
    padding: torch.Tensor | None = None
    """Bool ``[batch, >= kv_offset + kv_length]``, True for real tokens; None when nothing is padded."""
    device: torch.device = torch.device("cpu")
    """Where the masks are built."""
    _block_masks: dict[Any, BlockMask] = field(default_factory=dict, repr=False)
    _chunks: dict[tuple[int, int], SinkMaskSpec] = field(default_factory=dict, repr=False)


def sink_mask_spec(
    batch_size: int,
    q_length: int,
    kv_length: int,
    q_offset: int | torch.Tensor = 0,
    kv_offset: int | torch.Tensor = 0,
    attention_mask: torch.Tensor | None = None,
    device: torch.device | str = "cpu",
    **_: Any,
) -> SinkMaskSpec:
    """The mask function registered with transformers' ``AttentionMaskInterface``.

    Our reading: the causal/sliding pattern transformers passes in ``mask_function`` is not used;
    the attention function applies its layer's own window. Packed sequences (several documents in
    one row, found from ``position_ids``) are therefore not separated: pass an attention mask.
    """
    padding = None
    if attention_mask is not None and not bool(attention_mask.all()):
        padding = attention_mask.to(device=device, dtype=torch.bool)
        missing = int(kv_offset) + kv_length - padding.shape[-1]
        if missing > 0:  # a static cache holds slots no token has filled yet: they are never seen
            padding = torch.nn.functional.pad(padding, (0, missing), value=False)
    return SinkMaskSpec(batch_size, q_length, kv_length, q_offset, kv_offset, padding, torch.device(device))


def spec_for_unmasked(batch_size: int, q_length: int, kv_length: int, device: torch.device) -> SinkMaskSpec:
    """The spec when transformers passed no mask: no padding, the queries are the last positions."""
    return SinkMaskSpec(batch_size, q_length, kv_length, kv_length - q_length, 0, None, device)


def query_chunk(spec: SinkMaskSpec, start: int, stop: int) -> SinkMaskSpec:
    """The spec of queries ``start:stop`` against all keys (kept, so its BlockMasks are built once)."""
    if (start, stop) == (0, spec.q_length):
        return spec
    if (start, stop) not in spec._chunks:
        spec._chunks[start, stop] = SinkMaskSpec(spec.batch_size, stop - start, spec.kv_length,
                                                 torch.as_tensor(spec.q_offset + start, device=spec.device),
                                                 spec.kv_offset, spec.padding, spec.device)
    return spec._chunks[start, stop]


def mask_mod_for(spec: SinkMaskSpec, window: int | None) -> MaskMod:
    """The FlexAttention ``mask_mod`` (batch, head, q_idx, kv_idx) -> bool of ``spec`` and ``window``."""
    q_offset, kv_offset, padding = spec.q_offset, spec.kv_offset, spec.padding

    def mask_mod(batch: torch.Tensor, head: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        q_pos = q_idx + q_offset
        kv_pos = kv_idx + kv_offset
        seen = kv_pos <= q_pos
        if window is not None:
            seen = seen & (q_pos - kv_pos < window)
        if padding is not None:
            seen = seen & padding[batch, kv_pos]
        return seen

    return mask_mod


def block_mask(spec: SinkMaskSpec, window: int | None) -> BlockMask:
    """The ``BlockMask`` for ``window`` (None: full causal), built once per spec and window."""
    key = window
    if key not in spec._block_masks:
        spec._block_masks[key] = create_block_mask(
            mask_mod_for(spec, window),
            B=spec.batch_size if spec.padding is not None else None,
            H=None,
            Q_LEN=spec.q_length,
            KV_LEN=spec.kv_length,
            device=spec.device,
        )
    return spec._block_masks[key]


def dense_rows(spec: SinkMaskSpec, window: int | None, start: int, stop: int) -> torch.Tensor:
    """Bool ``[batch or 1, 1, stop - start, kv_length]``: the mask of queries ``start:stop``."""
    device = spec.device
    batch = torch.arange(spec.batch_size if spec.padding is not None else 1, device=device)
    q_idx = torch.arange(start, stop, device=device)
    kv_idx = torch.arange(spec.kv_length, device=device)
    head = torch.zeros((), dtype=torch.long, device=device)
    rule = mask_mod_for(spec, window)
    return rule(batch[:, None, None, None], head, q_idx[None, None, :, None], kv_idx[None, None, None, :])

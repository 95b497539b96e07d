"""Model FLOPs of a rollout, counted from the token positions that go through the model
(``rollout_throughput.py``; the formula is in that script's docstring). Not a benchmark
itself.

``TokenCounter(model)`` hooks the decoder trunk (the module under the LM head, which every
path calls with keyword arguments: the engine's prefill and decode steps, ``model.generate``,
through a peft wrapper or not) and adds up, per forward call, from ``input_ids`` and the 2-D
``attention_mask`` (whose last columns are the new positions):

- ``real``: new positions that are not padding (prefill and decode, every row);
- ``fed``: all new positions, padding included (what the matmuls actually multiply);
- ``context``: over the real new positions, the number of real keys each attends to
  (itself included): the length of the attention products.
"""

from __future__ import annotations

USED_BY = ("rollout_throughput.py",)
"""The scripts that import this module (the index, ``benchmarks/README.md``)."""

from dataclasses import dataclass

import torch

from bench_models import base_model, block_linear_weights


@dataclass
class ModelShape:
    """The sizes the FLOP count multiplies by."""

    linear_weights: int
    """Weights of the blocks' linear layers (non-embedding parameters less norms and biases)."""
    layers: int
    attention_width: int
    """Query heads x head dim."""
    hidden: int
    vocab: int

    @classmethod
    def of(cls, model: torch.nn.Module) -> "ModelShape":
        """The shape of ``model``; a merged LoRA adapter's A and B are not counted."""
        config = base_model(model).config
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        return cls(
            linear_weights=block_linear_weights(model, adapters=False)[0],
            layers=config.num_hidden_layers,
            attention_width=config.num_attention_heads * head_dim,
            hidden=config.hidden_size,
            vocab=config.vocab_size,
        )


@dataclass
class TokenCounts:
    """Positions through the model over some forward calls (module docstring)."""

    real: int = 0
    fed: int = 0
    context: int = 0


def rollout_flops(shape: ModelShape, counts: TokenCounts, generated: int) -> float:
    """2 N real + 4 w L context + 2 V h generated (``rollout_throughput.py``'s docstring)."""
    linear = 2 * shape.linear_weights * counts.real
    attention = 4 * shape.attention_width * shape.layers * counts.context
    head = 2 * shape.vocab * shape.hidden * generated
    return float(linear + attention + head)


class TokenCounter:
    """Context manager: counts the positions every forward call of ``model`` feeds."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.trunk = base_model(model).base_model
        self.counts = TokenCounts()
        self._handle = None

    def __enter__(self) -> "TokenCounter":
        self._handle = self.trunk.register_forward_pre_hook(self._count, with_kwargs=True)
        return self

    def __exit__(self, *exc) -> None:
        self._handle.remove()

    def _count(self, module, args, kwargs) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            ids = kwargs["inputs_embeds"][..., 0]
        batch, new = ids.shape
        mask = kwargs.get("attention_mask")
        if mask is None or mask.dim() != 2:
            cache = kwargs.get("past_key_values")
            past = cache.get_seq_length() if cache is not None else 0
            mask = torch.ones(batch, past + new, dtype=torch.long)
        mask = mask.long()
        fresh = mask[:, -new:]
        self.counts.real += int(fresh.sum())
        self.counts.fed += batch * new
        self.counts.context += int((mask.cumsum(1)[:, -new:] * fresh).sum())

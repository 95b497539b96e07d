"""One term of the RL loss in one micro-batch: what the update sums and logs.

The update (``training.rl_update``) always has the PPO term and, with a reference model,
the KL term; a method adds its own (``methods.base.Method.extra_loss_terms``: SEED's
distillation). Each term is aggregated over its own tokens and weighs ``coefficient``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ROWS = ("all", "distilled")
"""Which samples a term's aggregation count covers over a whole mini-batch: every sample,
or those with a teacher (a skill-augmented re-score)."""


@dataclass
class LossTerm:
    """One term of the loss in one micro-batch."""

    name: str
    """Its name in the metrics (``losses/<name>``; ``kl`` is logged as ``kl/ref``)."""
    loss: torch.Tensor
    """The term aggregated over its own tokens (``training.rl.loss_agg``)."""
    mask: torch.Tensor
    """[B, R] the tokens it was aggregated over (every response, or the distilled ones)."""
    metrics: dict[str, float]
    """Its diagnostics (``ppo/clipfrac``, ``opd/gate_mean``, ...)."""
    coefficient: float = 1.0
    """Its weight in the total loss."""
    rows: str = "all"
    """all or distilled (``ROWS``): the samples its mini-batch aggregation count covers."""
    minibatch_share: bool = False
    """Its loss and metrics are already this micro-batch's part of the mini-batch's (ESPO,
    whose episodes span micro-batches): the update sums them as they are, not weighted by
    the term's aggregation count."""

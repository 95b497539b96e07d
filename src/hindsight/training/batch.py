"""The rollout batch: one object from the engine to the loss, filled in stage by stage.

The rollout (``training.update_batch.collect_update_batch``) fills what was played: the step rows
(``table``, the storage view the catalog keeps) and one ``StepSample`` per row (token ids,
decoding masks, the sampled log-probs, episode and step ids). The loop then fills, in order:
the recorded log-probs (``old_logp``), the method's signals (``teacher_logp``: SEED's and
OPID's skill-augmented re-scores), the advantages, and with asynchronous rollouts the
proximal log-probs. Every per-sample field is indexed like ``samples``; ``select`` keeps
them aligned, so no list travels alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd
import torch

from hindsight.policy.encoding import StepSample


@dataclass
class RolloutBatch:
    """What one update trains on, and everything it played."""

    table: pd.DataFrame
    """The kept step rows (the training batch), in play order."""
    samples: list[StepSample]
    """One per row of ``table``."""
    played: pd.DataFrame
    """Every step row played in this update (rollout metrics, pass rates, last rollout)."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Figures of how the batch was produced (``stepo/...``, ``tasks/...``, ``world_model/...``)."""
    recorded: pd.DataFrame | None = None
    """What the run keeps as its last rollout when not ``played`` (WM-R1: the batch trained
    on, with its replayed stored successes)."""
    simulated: bool = False
    """Played inside a world model: none of its steps is an environment step."""
    old_logp: list[torch.Tensor] = field(default_factory=list)
    """Per sample: the recorded log-probs of its response tokens (the behaviour policy)."""
    teacher_logp: list[torch.Tensor | None] = field(default_factory=list)
    """Per sample: its response re-scored by the method's teacher (None: no teacher)."""
    advantages: torch.Tensor | None = None
    """[N] one advantage per sample (the method's; STEPO's step weights folded in)."""
    proximal_logp: list[torch.Tensor] | None = None
    """Per sample (asynchronous rollouts, replayed successes, an inexact rollout backend): the
    learner's log-probs before this update; the update is then decoupled PPO."""
    behaviour_weight_cap: float | None = None
    """With ``proximal_logp``: the cap of the weight pi_prox / pi_behav, set by whoever filled
    them (the asynchronous producer, the positive replay, the backend correction; None: no cap)."""
    skills: pd.DataFrame | None = None
    """The skills written for this batch's episodes (SEED, OPID)."""
    update: int = 0
    """The index of the update that trains on it (0 for the first)."""

    def __len__(self) -> int:
        return len(self.samples)

    def record_old_logprobs(self) -> None:
        """``old_logp`` from the samples' sampled log-probs; no teacher yet."""
        self.old_logp = [torch.as_tensor(sample.old_logprobs, dtype=torch.float32) for sample in self.samples]
        self.teacher_logp = [None] * len(self.samples)

    @property
    def episode_ids(self) -> list[str]:
        """Each sample's episode."""
        return [sample.episode_id for sample in self.samples]

    def select(self, indices: Sequence[int]) -> "MicroBatch":
        """The per-sample fields of these samples, in this order (the advantages must be filled)."""
        if self.advantages is None or len(self.old_logp) != len(self.samples):
            raise ValueError("RolloutBatch.select: the batch has no advantages or recorded log-probs yet (score it first)")
        return MicroBatch(
            samples=[self.samples[i] for i in indices],
            advantages=self.advantages[list(indices)],
            old_logp=[self.old_logp[i] for i in indices],
            teacher_logp=[self.teacher_logp[i] for i in indices],
            proximal_logp=[self.proximal_logp[i] for i in indices] if self.proximal_logp is not None else None,
            behaviour_weight_cap=self.behaviour_weight_cap,
        )


@dataclass
class MicroBatch:
    """Some samples of a ``RolloutBatch`` with their per-sample fields (one forward pass)."""

    samples: list[StepSample]
    advantages: torch.Tensor
    old_logp: list[torch.Tensor]
    teacher_logp: list[torch.Tensor | None]
    proximal_logp: list[torch.Tensor] | None
    behaviour_weight_cap: float | None = None

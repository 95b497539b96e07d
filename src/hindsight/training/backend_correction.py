"""The correction for an inexact rollout backend (``policy.backends``: CTranslate2 in int8),
settings ``training.rl.schedulers.backend_correction`` (``BackendCorrectionSettings``).

An engine whose log-probs are not the learner's samples from a slightly different policy.
Before the update the learner recomputes the log-probs of the rollout's tokens; those become
the proximal policy and the engine's the behaviour one, so the update is decoupled PPO
(``algorithms.decoupled_ppo_loss``) with the truncated importance weight
pi_learner / pi_engine capped at ``weight_cap``. With the torch backend, whose log-probs are
the learner's, nothing changes; a batch that already has proximal log-probs (asynchronous
rollouts, the curriculum's positive replay) keeps them and their cap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from hindsight.policy import Policy
from hindsight.rollout.engine import RolloutConfig
from hindsight.training.batch import RolloutBatch
from hindsight.training.distillation import response_logprobs

if TYPE_CHECKING:
    from hindsight.training.rl_config import RLConfig


@dataclass
class BackendCorrectionSettings:
    """The correction for an inexact rollout backend (module docstring)."""

    weight_cap: float | None = 2.0
    """A rollout backend whose log-probs are not the learner's (``rollout.backend:
    ctranslate2`` in int8): the truncated importance weight pi_learner / pi_engine of the
    decoupled-PPO update is capped here (None: no cap). Ignored with the torch backend."""

    def __post_init__(self) -> None:
        if self.weight_cap is not None and self.weight_cap <= 0:
            raise ValueError(f"training.rl.schedulers.backend_correction.weight_cap must be > 0 or null, got {self.weight_cap}")


@dataclass
class BackendCorrection:
    """The correction as a piece of the loop's schedule (``training.schedule``)."""

    weight_cap: float | None = 2.0

    def apply(
        self, policy: Policy, batch: RolloutBatch, rollout_config: RolloutConfig, config: RLConfig, metrics: dict[str, float]
    ) -> None:
        """With an inexact backend: the learner's log-probs of the rollout's tokens become
        ``batch.proximal_logp`` with this cap; adds ``rollout/sampler_logprob_gap`` (mean
        |learner - engine| per token). Nothing with an exact backend, an empty batch, or a
        batch that has proximal log-probs already."""
        if rollout_config.inference_backend().exact or not len(batch) or batch.proximal_logp is not None:
            return
        learner = response_logprobs(
            policy.model, batch.samples, config.mini_batch_size, policy.tokenizer.pad_token_id, token_budget=config.micro_batch_tokens,
        )
        gaps = torch.cat([(mine - theirs).abs() for mine, theirs in zip(learner, batch.old_logp)])
        metrics["rollout/sampler_logprob_gap"] = float(gaps.mean()) if len(gaps) else 0.0
        batch.proximal_logp, batch.behaviour_weight_cap = learner, self.weight_cap

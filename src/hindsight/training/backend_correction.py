"""The correction for an inexact rollout backend (``policy.backends``: CTranslate2 in int8),
settings ``training.rl.schedulers.backend_correction`` (``training.scheduler_settings.BackendCorrectionSettings``).

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

import torch

from hindsight.policy import Policy
from hindsight.rollout.engine import RolloutConfig
from hindsight.training.batch import RolloutBatch
from hindsight.training.distillation import response_logprobs




@dataclass
class BackendCorrection:
    """The correction as a piece of the loop's schedule (``training.schedule``)."""

    weight_cap: float | None = 2.0

    def apply(
        self, policy: Policy, batch: RolloutBatch, rollout_config: RolloutConfig, metrics: dict[str, float], *,
        batch_size: int, token_budget: int | None,
    ) -> None:
        """With an inexact backend: the learner's log-probs of the rollout's tokens (scored
        ``batch_size`` samples and at most ``token_budget`` padded tokens per pass) become
        ``batch.proximal_logp`` with this cap; adds ``rollout/sampler_logprob_gap`` (mean
        |learner - engine| per token). Nothing with an exact backend, an empty batch, or a
        batch that has proximal log-probs already."""
        if rollout_config.inference_backend().exact or not len(batch) or batch.proximal_logp is not None:
            return
        learner = response_logprobs(
            policy.model, batch.samples, batch_size, policy.tokenizer.pad_token_id, token_budget=token_budget,
        )
        gaps = torch.cat([(mine - theirs).abs() for mine, theirs in zip(learner, batch.old_logp)])
        metrics["rollout/sampler_logprob_gap"] = float(gaps.mean()) if len(gaps) else 0.0
        batch.proximal_logp, batch.behaviour_weight_cap = learner, self.weight_cap

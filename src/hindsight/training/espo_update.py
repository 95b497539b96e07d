"""ODYSSE's objective choice (settings ``training.rl.schedulers.odysse``,
``training.scheduler_settings.OdysseSettings``: its episodic sampler,
``training.minibatches``, and its objective) and ESPO in the RL update
(``objective: espo``, ``EspoObjective``): our reading of ODYSSE's episode-level objective,
one clipped importance ratio per episode (``algorithms.espo_loss``) in place of the
token-level PPO term.

It needs whole episodes per mini-batch (``episode_minibatches: true``). A mini-batch
still runs as micro-batches within ``micro_batch_tokens``, and those cut episodes apart
(samples are sorted by length), so an episode's ratio is measured first over the whole
mini-batch: ``EpisodeTotals.measure`` runs one forward pass without gradient over the
mini-batch's micro-batches and sums ``logp - old_logp`` and the chosen tokens per episode.
Each micro-batch's ESPO term is then its share of the mini-batch loss, with the gradient
through its own tokens (``espo_loss`` with the totals): summed over the micro-batches, the
step is the one-pass step. The price is that extra forward pass per mini-batch.

Advantages: each episode's is the mean over its steps of the full batch's advantage,
re-centred (and, with ``std_normalize``, scaled) over the episodes of the mini-batch
(``algorithms.episode_minibatch_advantages``). Refused: asynchronous rollouts (decoupled
PPO has no episode-level form here; the curriculum's positive replay likewise),
``torchrun`` (the totals would need summing over the
ranks) and methods with token-level advantages (OPID), which one ratio per episode drops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from hindsight import algorithms
from hindsight.policy.encoding import StepSample
from hindsight.training.batch import RolloutBatch
from hindsight.training.loss_terms import LossTerm
from hindsight.training.method import Method
from hindsight.training.response_tensors import pad_right_aligned, policy_response_logprobs
from hindsight.training.scheduler_settings import OdysseSettings

ESPO_AGGREGATION = "episode-mean"
"""How the update aggregates ESPO over episodes: each episode weighs one (``ppo.loss_agg``
still applies to the KL and the method's own terms)."""




class EspoObjective:
    """The update's policy term as ESPO: each mini-batch measures its episodes first
    (``EpisodeTotals``), then every micro-batch adds its share of the episode-level loss."""

    name = "espo"

    def check(self, method: Method, *, parallel: bool) -> None:
        """Refuse ESPO where it cannot run correctly (module docstring)."""
        check_espo("espo", method, parallel=parallel)

    def measure(
        self, model, batch: RolloutBatch, members: Sequence[int], plan: Sequence[tuple[list[int], float]], pad: int, device,
        *, std_normalize: bool, clip_low: float, clip_high: float,
    ) -> "EpisodeTotals":
        """The mini-batch's episode totals (``EpisodeTotals.measure``)."""
        return EpisodeTotals.measure(
            model, batch, members, plan, pad, device, std_normalize=std_normalize, clip_low=clip_low, clip_high=clip_high
        )


def episode_objective(settings: OdysseSettings) -> EspoObjective | None:
    """The policy term the settings ask for: ``EspoObjective``, or None (token-level PPO)."""
    return EspoObjective() if settings.objective == "espo" else None


def check_espo(objective: str, method: Method, *, parallel: bool) -> None:
    """Refuse ESPO (``objective``, the setting ``schedulers.odysse.objective``) where it
    cannot run correctly (module docstring)."""
    if objective != "espo":
        return
    if parallel:
        raise ValueError("training.rl.schedulers.odysse.objective: espo is not supported under torchrun (set it to token)")
    if type(method).token_advantages is not Method.token_advantages:
        raise ValueError(
            f"training.rl.schedulers.odysse.objective: espo takes one advantage per episode; method {method.name!r} "
            "has token-level advantages (set objective: token or choose another algorithm)"
        )


@dataclass
class EpisodeTotals:
    """The episodes of one mini-batch, measured before its step."""

    index: dict[str, int]
    """Episode id -> its position in the tensors below."""
    log_ratio_sum: torch.Tensor
    """[E] sum of ``logp - old_logp`` over each episode's chosen tokens."""
    tokens: torch.Tensor
    """[E] each episode's chosen tokens."""
    advantages: torch.Tensor
    """[E] each episode's advantage, normalised over the mini-batch's episodes."""
    clip_low: float
    """The PPO clip below 1 (the run's ``ppo.clip_low``)."""
    clip_high: float
    """The PPO clip above 1 (the run's ``ppo.clip_high``)."""

    @classmethod
    @torch.no_grad()
    def measure(
        cls, model, batch: RolloutBatch, members: Sequence[int], plan: Sequence[tuple[list[int], float]], pad: int, device,
        *, std_normalize: bool, clip_low: float, clip_high: float,
    ) -> "EpisodeTotals":
        """One forward pass without gradient over the mini-batch ``members`` (run as ``plan``);
        advantages scaled by their std with ``std_normalize``, the ratio clipped at ``clip_low``
        and ``clip_high``."""
        if batch.proximal_logp is not None:
            raise ValueError(
                "training.rl.schedulers.odysse.objective: espo has no decoupled (proximal) form: this batch has proximal "
                "log-probs (schedulers.async_rollouts or the curriculum's positive_replay); set objective: token or turn those off"
            )
        episode_ids = [batch.samples[i].episode_id for i in members]
        index = {episode: position for position, episode in enumerate(dict.fromkeys(episode_ids))}
        rows = torch.tensor([index[episode] for episode in episode_ids])
        per_sample = algorithms.episode_minibatch_advantages(batch.advantages[list(members)], rows, scale=std_normalize)
        advantages = torch.zeros(len(index)).index_copy(0, rows, per_sample.float())
        log_ratio_sum, tokens = torch.zeros(len(index)), torch.zeros(len(index))
        for micro, _ in plan:
            chunk = batch.select(micro)
            logp, mask, width, _ = policy_response_logprobs(model, chunk.samples, pad, device)
            log_ratio = torch.where(mask != 0, logp - pad_right_aligned(chunk.old_logp, width), torch.zeros_like(logp))
            at = torch.tensor([index[sample.episode_id] for sample in chunk.samples])
            log_ratio_sum.index_add_(0, at, log_ratio.sum(dim=-1))
            tokens.index_add_(0, at, mask.sum(dim=-1))
        return cls(index, log_ratio_sum, tokens, advantages, clip_low, clip_high)

    def metrics(self) -> dict[str, float]:
        """``espo/episode_clipfrac``, ``espo/ratio_mean``, ``espo/ratio_max``, ``espo/episodes_per_minibatch``."""
        figures = algorithms.espo_metrics(self.log_ratio_sum, self.tokens, self.advantages, self.clip_low, self.clip_high)
        figures["episodes_per_minibatch"] = figures.pop("episodes")
        return {f"espo/{key}": value for key, value in figures.items()}

    def loss_term(
        self, logp: torch.Tensor, old: torch.Tensor, mask: torch.Tensor, samples: Sequence[StepSample]
    ) -> LossTerm:
        """The ESPO term of one micro-batch: its share of the mini-batch loss (``ppo`` in the
        metrics, so ``losses/ppo`` reads the ESPO loss)."""
        rows = torch.tensor([self.index[sample.episode_id] for sample in samples])
        loss, _ = algorithms.espo_loss(
            logp, old, self.advantages[rows], mask, rows, clip_low=self.clip_low, clip_high=self.clip_high,
            agg=ESPO_AGGREGATION, episode_log_ratio_sum=self.log_ratio_sum, episode_tokens=self.tokens,
        )
        gap = float(algorithms.masked_mean((logp - old).abs().detach(), mask))
        return LossTerm("ppo", loss, mask, {"rollout/logprob_gap": self.token_share(mask) * gap}, minibatch_share=True)

    def token_share(self, mask: torch.Tensor) -> float:
        """A micro-batch's share of the mini-batch's chosen tokens: what a token mean over
        the micro-batch weighs in the mini-batch's (its metrics are summed as they are)."""
        return float(mask.sum()) / max(float(self.tokens.sum()), 1.0)

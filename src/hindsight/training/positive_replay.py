"""Stored episodes put back into a batch: rebuilding their step samples from the table and
scoring them with the current policy (``rebuild_scored_samples``, shared with WM-R1's
replay), and the curriculum's difficult positive replay (``replay_hard_successes``).

Difficult positive replay (EvoCUA; the mechanics are our reading): every group of the batch
whose task is a hard success (won before, pass-rate estimate <= the curriculum's
``hard_threshold``, ``rollout.curriculum``) and has a stored won episode swaps its last rollout for that episode
(rows ``source: replay``, episode id ``replay/<group_id>/v<update>``). Its step samples are
rebuilt from the stored rows; their behaviour log-probs are the ones recorded when it was
played (``response_logprobs``), the proximal log-probs the current policy's, so the update
is decoupled PPO (``algorithms.decoupled_ppo_loss``) with the weight ``pi_prox / pi_behav``
capped by the curriculum's ``replay_weight_cap`` (``PositiveReplay``, settings
``training.rl.schedulers.curriculum``); every fresh sample has proximal = behaviour
(weight 1, plain PPO). A stored episode whose rebuilt responses do not match its recorded
log-probs token for token is not replayed. Pass rates read only the episodes played
(``batch.played``), never the replayed one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd
import torch

from hindsight.envs.infeasible import is_infeasible_group
from hindsight.policy.encoding import StepSample
from hindsight.policy.table_samples import refuse_policy_that_sees, samples_from_table
from hindsight.rollout.config import RolloutConfig
from hindsight.rollout.curriculum import curriculum_bucket
from hindsight.rollout.pass_rates import PassRates
from hindsight.training.batch import RolloutBatch
from hindsight.training.distillation import response_logprobs

REPLAY_SOURCE = "replay"
"""The ``source`` of a replayed stored episode in the rollout table (episode ids ``replay/...``)."""


def check_replayable(policy) -> None:
    """Refuse a policy that sees: a replayed episode's samples are rebuilt from its stored
    rows, which keep no screen (``table_samples.refuse_policy_that_sees``)."""
    refuse_policy_that_sees(
        policy, "replaying a stored episode (training.rl.schedulers.curriculum.positive_replay, WM-R1's replay)",
        "set training.rl.schedulers.curriculum.positive_replay: false for a policy that sees",
    )


def rebuild_samples(policy, rows: pd.DataFrame, rollout: RolloutConfig) -> tuple[pd.DataFrame, list[StepSample]]:
    """(the rows sorted by episode and step, their rebuilt step samples in that order).

    Raises:
        ValueError: ``policy`` sees (stored rows keep no screen: ``refuse_policy_that_sees``).
    """
    check_replayable(policy)
    samples = samples_from_table(
        rows, policy.tokenizer, rollout.prompt, constrained=rollout.sampling.constrained, max_length=rollout.sampling.max_length or 1024
    )
    return rows.sort_values(["episode_id", "step"]).reset_index(drop=True), samples


def rebuild_scored_samples(
    policy, rows: pd.DataFrame, rollout: RolloutConfig
) -> tuple[pd.DataFrame, list[StepSample], list[torch.Tensor]]:
    """``rebuild_samples`` and the current policy's log-probs of each sample's response."""
    rows, samples = rebuild_samples(policy, rows, rollout)
    logp = [lp.float() for lp in response_logprobs(policy.model, samples, 16, policy.tokenizer.pad_token_id)]
    return rows, samples, logp


def replay_candidates(batch: RolloutBatch, rates: PassRates, hard_threshold: float) -> list[str]:
    """The batch's groups of hard-success tasks that have a stored won episode, in order."""
    groups = [g for g in dict.fromkeys(batch.table["group_id"]) if not is_infeasible_group(g)]
    return [
        g for g in groups
        if g in rates.successes and curriculum_bucket(rates.record(g), hard_threshold) == "hard_success"
    ]


@dataclass
class PositiveReplay:
    """The curriculum's difficult positive replay as a piece of the loop's schedule
    (``training.schedule``): on when ``schedulers.curriculum`` is enabled with ``positive_replay``."""

    hard_threshold: float
    """A solved task whose estimate is at most this is a hard success (the curriculum's)."""
    weight_cap: float | None = None
    """Cap of pi_prox / pi_behav on the replayed samples (``replay_weight_cap``)."""

    def replay(
        self, policy, batch: RolloutBatch, rates: PassRates, rollout: RolloutConfig, update: int, *,
        batch_size: int, token_budget: int | None,
    ) -> dict[str, float]:
        """``replay_hard_successes``; its metric ``curriculum/replayed_successes``."""
        replayed = replay_hard_successes(
            policy, batch, rates, rollout, update, hard_threshold=self.hard_threshold, weight_cap=self.weight_cap,
            batch_size=batch_size, token_budget=token_budget,
        )
        return {"curriculum/replayed_successes": float(replayed)}


def replay_hard_successes(
    policy, batch: RolloutBatch, rates: PassRates, rollout: RolloutConfig, update: int,
    *, hard_threshold: float, weight_cap: float | None = None, batch_size: int, token_budget: int | None,
) -> int:
    """Swap the last rollout of each hard-success group for its stored won episode (module
    docstring); fills ``batch.proximal_logp`` (and ``batch.behaviour_weight_cap`` with
    ``weight_cap``) when it replays any. Returns how many.

    The replayed samples are scored in one pass, in batch order, with the scoring sizes of
    the asynchronous path's proximal log-probs (``batch_size``, ``token_budget``: the run's
    ``mini_batch_size`` and ``micro_batch_tokens``),
    so a lock-step asynchronous run scores them exactly as the synchronous one."""
    swapped, rows_in, samples_in = [], [], []
    for group_id in replay_candidates(batch, rates, hard_threshold):
        rows = pd.DataFrame(rates.successes[group_id])
        rows["episode_id"], rows["source"] = f"{REPLAY_SOURCE}/{group_id}/v{update}", REPLAY_SOURCE
        rows, samples = rebuild_samples(policy, rows, rollout)
        recorded = [torch.as_tensor(list(lp), dtype=torch.float32) for lp in rows["response_logprobs"]]
        if any(len(r) != len(s.response_ids) for r, s in zip(recorded, samples)):
            continue  # the rebuilt responses are not the recorded ones: no behaviour log-probs
        episodes = batch.table.loc[batch.table["group_id"] == group_id, "episode_id"]
        swapped.append(sorted(set(episodes))[-1])
        rows_in.append(rows)
        samples_in += [dataclasses.replace(s, old_logprobs=r) for s, r in zip(samples, recorded)]
    if not swapped:
        return 0
    current = response_logprobs(
        policy.model, samples_in, batch_size, policy.tokenizer.pad_token_id, token_budget=token_budget
    )
    keep = ~batch.table["episode_id"].isin(swapped).to_numpy()
    kept_samples = [sample for sample, kept in zip(batch.samples, keep) if kept]
    proximal = [torch.as_tensor(s.old_logprobs, dtype=torch.float32) for s in kept_samples] + list(current)
    table = pd.concat([batch.table[keep], *[rows[batch.table.columns] for rows in rows_in]], ignore_index=True)
    table.attrs = dict(batch.table.attrs)
    batch.table, batch.samples, batch.proximal_logp = table, kept_samples + samples_in, proximal
    batch.behaviour_weight_cap = weight_cap
    return len(swapped)

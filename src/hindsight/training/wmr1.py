"""WM-R1 inside the RL loop (ALGORITHMS.md section 4): what happens between a rollout in the
world model and the policy update.

1. Replay: every all-failure group (no simulated success) has its last rollout swapped for
   a stored success of that task (a won expert episode in the trajectory table), its step
   samples rebuilt from the table (same prompts, same constrained decoding) and scored by
   the current policy, whose log-probs stand in as the behaviour log-probs (ratio 1 at the
   first mini-batch). Groups of tasks without a stored success stay as they are.
2. Scores: one per trajectory, ``algorithms.wm_r1_rewards`` = ``1.0 R_succ + 0.5 R_len +
   0.1 R_wm`` with the per-group adaptive budgets; the length budget is the step limit and
   the world-model call budget the same. The length counts committed actions; the calls
   count committed actions and imagined turns (one world-model call each; a refused
   imagined turn and a replayed episode made none). Advantages: GRPO over the group,
   statistics taken over trajectories.
3. Metrics (``world_model/...``): world-model calls of the update, simulated success rate
   (before replay), all-failure groups, replayed groups and imagined turns.

Imagined turns (``training.rl.wmr1_imagined_turns``, off by default) are turns of the
world-model environment itself (``envs.world_model``): rows whose action starts with
``imagine: ``.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import torch

from hindsight import algorithms
from hindsight.data.outcomes import episode_outcomes
from hindsight.envs.world_model import IMAGINE_PREFIX, WorldModelSimulator
from hindsight.policy.encoding import StepSample, samples_from_table
from hindsight.rollout.engine import RolloutConfig
from hindsight.training.distillation import response_logprobs
from hindsight.training.rl_config import RLConfig

REPLAY_SOURCE = "replay"
"""The ``source`` of a replayed stored success in the rollout table (episode ids ``replay/...``)."""


def replay_stored_successes(
    policy, table: pd.DataFrame, samples: list[StepSample], simulator: WorldModelSimulator, rollout: RolloutConfig, update: int
) -> tuple[pd.DataFrame, list[StepSample], int]:
    """Swap the last rollout of each all-failure group for a stored success of its task.

    Args:
        policy: The current policy (scores the replayed steps).
        table: The rollout table (world-model episodes).
        samples: Its step samples, one per row, same order.
        simulator: Holds the recorded tasks and their won episodes.
        rollout: The rollout settings (prompt format, constrained decoding, token budget).
        update: The update index (picks which stored success when there are several).

    Returns:
        (table, samples, number of replayed groups).
    """
    outcomes = episode_outcomes(table, keys=["group_id"])
    failed = outcomes.groupby("group_id")["success"].any()
    replaced, extra_rows = [], []
    for group_id in sorted(failed[~failed].index):
        stored = simulator.tasks.won_episodes.get(group_id) or []
        if not stored:
            continue
        last = sorted(outcomes.loc[outcomes["group_id"] == group_id, "episode_id"])[-1]
        rows = simulator.tasks.episode_rows(stored[update % len(stored)]).copy()
        rows["episode_id"] = f"{REPLAY_SOURCE}/{group_id}/v{update}"
        rows["source"] = REPLAY_SOURCE
        rows["policy_version"] = update
        replaced.append(last)
        extra_rows.append(rows)
    if not replaced:
        return table, samples, 0
    keep = ~table["episode_id"].isin(replaced).to_numpy()
    replay = pd.concat(extra_rows, ignore_index=True)
    replay_samples = samples_from_table(
        replay, policy.tokenizer, rollout.prompt, constrained=rollout.constrained, max_length=rollout.max_length or 1024
    )
    logp = response_logprobs(policy.model, replay_samples, 16, policy.tokenizer.pad_token_id)
    replay_samples = [dataclasses.replace(s, old_logprobs=lp.float()) for s, lp in zip(replay_samples, logp)]
    replay = replay.sort_values(["episode_id", "step"]).reset_index(drop=True)  # samples_from_table's order
    replay["response_logprobs"] = [lp.tolist() for lp in logp]
    kept_samples = [sample for sample, kept in zip(samples, keep) if kept]
    merged = pd.concat([table[keep], replay[table.columns]], ignore_index=True)
    merged.attrs = dict(table.attrs)
    return merged, kept_samples + replay_samples, len(replaced)


def imagined_turns(table: pd.DataFrame) -> pd.Series:
    """Which rows are imagined turns (bool, aligned with ``table``)."""
    return table["action"].astype(str).str.startswith(IMAGINE_PREFIX)


def wmr1_scores(table: pd.DataFrame, max_steps: int) -> pd.Series:
    """The WM-R1 reward of each episode (indexed by ``episode_id``)."""
    outcomes = episode_outcomes(table, keys=["group_id"])
    imagined = imagined_turns(table)
    refused = imagined & ~table["action_valid"].astype(bool)
    counts = table.assign(call=(table["source"] != REPLAY_SOURCE) & ~refused, committed=~imagined)
    counts = counts.groupby("episode_id")[["call", "committed"]].sum()
    rewards = algorithms.wm_r1_rewards(
        outcomes["episode_id"].map(counts["committed"]).tolist(), outcomes["success"].tolist(),
        outcomes["episode_id"].map(counts["call"]).tolist(), outcomes["group_id"].tolist(), max_length=max_steps, max_calls=max_steps,
    )
    return pd.Series(rewards.tolist(), index=outcomes["episode_id"].tolist())


def wmr1_advantages(table: pd.DataFrame, config: RLConfig, max_steps: int) -> torch.Tensor:
    """GRPO advantages [N] of the step samples (rows of ``table``, in order) from the WM-R1 reward."""
    scores = table["episode_id"].map(wmr1_scores(table, max_steps))
    return algorithms.group_normalized_advantages(
        torch.tensor(scores.to_numpy(dtype="float64"), dtype=torch.float32), table["group_id"].tolist(),
        std_normalize=config.std_normalize, traj_ids=table["episode_id"].tolist(),
    )


def world_model_metrics(simulated: pd.DataFrame, replayed_groups: int, calls: int) -> dict[str, float]:
    """What shows the mechanism ran in one update."""
    outcomes = episode_outcomes(simulated, keys=["group_id"])
    group_success = outcomes.groupby("group_id")["success"].any()
    return {
        "world_model/calls": float(calls),
        "world_model/simulated_steps": float(len(simulated)),
        "world_model/simulated_success_rate": float(outcomes["success"].mean()) if len(outcomes) else 0.0,
        "world_model/all_failure_groups": float((~group_success).sum()),
        "world_model/replayed_groups": float(replayed_groups),
        "world_model/imagined_turns": float(imagined_turns(simulated).sum()) if len(simulated) else 0.0,
    }

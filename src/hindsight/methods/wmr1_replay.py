"""WM-R1's replay of the policy's own successes, as its official code does it.

After every rollout each won episode joins its task's buffer (``SuccessBuffer``), at most
``capacity`` (official 8) kept per task, the oldest dropped first; the buffer lives across
updates and in the run's checkpoint (``state_dict``), so a resumed run keeps it (our extension:
the official checkpoint holds the actor, the critic and the data loader only). Before the
buffer takes the batch's own wins, every group whose success judgments (1 won, 0 not) have
a population std below ``TRIGGER_STD`` (0.05) and a mean below ``TRIGGER_MEAN`` (0.2)
(``groups_to_replay``: with 0/1 judgments, a group without a win) has its first rollout
swapped for one stored success of its task, drawn at random (``replay_own_successes``).

The replayed episode keeps what it stored: its rows (length, in-response world-model
calls, imagined turns) and its step samples (tokens, forced tokens, allowed ids); it is
scored like any rollout (``wmr1_scores``: its stored ``n_wm`` counts in ``R_wm``). Its
behaviour log-probs are the current policy's (as the official trainer, which recomputes the
old log-probs of the whole batch after the replay): ratio 1 at the first mini-batch. Rows
``source: replay``, episode id ``replay/<group_id>/v<update>``.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hindsight.data.outcomes import episode_outcomes
from hindsight.policy.encoding import StepSample
from hindsight.training.distillation import response_logprobs
from hindsight.training.positive_replay import REPLAY_SOURCE

TRIGGER_STD = 0.05
"""A group is replayed into when the std of its success judgments is below this ..."""
TRIGGER_MEAN = 0.2
"""... and their mean below this (the official thresholds)."""


@dataclass
class StoredSuccess:
    """One won episode as it was played: its rows and its step samples (same order)."""

    rows: pd.DataFrame
    samples: list[StepSample]


@dataclass
class SuccessBuffer:
    """The policy's own won episodes per task (group id), oldest first."""

    capacity: int = 8
    """Most episodes kept per task (official 8)."""
    episodes: dict[str, list[StoredSuccess]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"the replay buffer keeps at least 1 episode per task, got capacity {self.capacity}")

    def __len__(self) -> int:
        return sum(len(stored) for stored in self.episodes.values())

    def add_successes(self, table: pd.DataFrame, samples: list[StepSample]) -> int:
        """Store the won episodes of a played batch (``table`` rows, one sample per row; rows
        already replayed are skipped); returns how many were added."""
        if len(table) != len(samples):
            raise ValueError(f"the replay buffer needs one sample per row: {len(table)} rows, {len(samples)} samples")
        fresh = (table["source"] != REPLAY_SOURCE).to_numpy()
        outcomes = episode_outcomes(table[fresh], keys=["group_id"])
        added = 0
        for group_id, episode_id in outcomes.loc[outcomes["success"], ["group_id", "episode_id"]].itertuples(index=False):
            at = np.flatnonzero(fresh & (table["episode_id"] == episode_id).to_numpy())
            stored = self.episodes.setdefault(str(group_id), [])
            stored.append(StoredSuccess(table.iloc[at].reset_index(drop=True), [samples[i] for i in at]))
            del stored[: max(0, len(stored) - self.capacity)]
            added += 1
        return added

    def draw(self, group_id: str, rng: random.Random) -> StoredSuccess | None:
        """One stored success of the task, drawn uniformly (None: none stored)."""
        stored = self.episodes.get(str(group_id)) or []
        return rng.choice(stored) if stored else None

    def state_dict(self) -> dict[str, Any]:
        """What the checkpoint keeps (plain containers, DataFrames and step samples)."""
        return {
            "capacity": self.capacity,
            "episodes": {group: [(s.rows, s.samples) for s in stored] for group, stored in self.episodes.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (the capacity stays this buffer's)."""
        self.episodes = {
            group: [StoredSuccess(rows, list(samples)) for rows, samples in stored][-self.capacity :]
            for group, stored in state.get("episodes", {}).items()
        }


def groups_to_replay(table: pd.DataFrame) -> list[str]:
    """The groups whose success judgments have std < ``TRIGGER_STD`` and mean <
    ``TRIGGER_MEAN``, in order of first appearance."""
    outcomes = episode_outcomes(table, keys=["group_id"])
    judged = outcomes.assign(won=outcomes["success"].astype(float)).groupby("group_id", sort=False)["won"]
    stats = judged.agg(mean="mean", std=lambda won: float(np.std(won)))
    return [str(group) for group in stats.index[(stats["std"] < TRIGGER_STD) & (stats["mean"] < TRIGGER_MEAN)]]


def replay_own_successes(
    policy, table: pd.DataFrame, samples: list[StepSample], buffer: SuccessBuffer, update: int, seed: int
) -> tuple[pd.DataFrame, list[StepSample], int]:
    """Swap the first rollout of each triggered group for a stored success of its task, then
    store the batch's own wins (module docstring).

    Args:
        policy: The current policy (re-scores the replayed steps).
        table: The played rollout table (world-model episodes).
        samples: Its step samples, one per row, same order.
        buffer: The policy's stored successes (updated in place).
        update: The update index (names the replayed episodes).
        seed: Seeds the draw among a task's stored successes.

    Returns:
        (table, samples, number of replayed groups).
    """
    rng = random.Random(seed)
    swapped, rows_in, samples_in = [], [], []
    for group_id in groups_to_replay(table):
        stored = buffer.draw(group_id, rng)
        if stored is None:
            continue
        episode_id = f"{REPLAY_SOURCE}/{group_id}/v{update}"
        swapped.append(table.loc[table["group_id"] == group_id, "episode_id"].iloc[0])
        rows_in.append(stored.rows.assign(episode_id=episode_id, source=REPLAY_SOURCE).reindex(columns=table.columns))
        samples_in += [dataclasses.replace(s, episode_id=episode_id) for s in stored.samples]
    buffer.add_successes(table, samples)  # after the choice, as the official trainer
    if not swapped:
        return table, samples, 0
    current = response_logprobs(policy.model, samples_in, 16, policy.tokenizer.pad_token_id)
    samples_in = [dataclasses.replace(s, old_logprobs=lp.float()) for s, lp in zip(samples_in, current)]
    replay = pd.concat(rows_in, ignore_index=True)
    if "response_logprobs" in table.columns:
        replay["response_logprobs"] = [lp.tolist() for lp in current]
    return swap_episodes(table, samples, swapped, replay, samples_in)


def swap_episodes(
    table: pd.DataFrame, samples: list[StepSample], swapped: list[str], rows: pd.DataFrame, new_samples: list[StepSample]
) -> tuple[pd.DataFrame, list[StepSample], int]:
    """``table`` / ``samples`` without the ``swapped`` episodes, ``rows`` / ``new_samples``
    appended (``table``'s columns and attrs), and how many episodes were swapped."""
    keep = ~table["episode_id"].isin(swapped).to_numpy()
    merged = pd.concat([table[keep], rows[table.columns]], ignore_index=True)
    merged.attrs = dict(table.attrs)
    return merged, [s for s, kept in zip(samples, keep) if kept] + new_samples, len(swapped)

"""The real episodes the world model learns from and is scored on, by source.

Four sources (``config.WorldModelConfig``): the gold episodes (``trajectories``, a share of
them: ``gold_share``), the skills stage's base-policy rollouts (``use_rollouts``), random
episodes (``random_episodes_per_game``) and the start policy's own episodes, won and lost
(``policy_episodes``, a share of them: ``trained_share``). Every source is split into
held-out and training episodes by the same stable draw (``transitions.is_heldout``); a
share keeps every held-out episode (scored, never trained on) and a second stable draw of
the others, so the held-out episodes stay the same whatever the shares.

The start policy's episodes are told apart by their ids (``POLICY_PREFIX``), since their
``source`` is ``rollout`` as the schema wants, like the skills stage's.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import pandas as pd

from hindsight.policy import Policy
from hindsight.rollout.config import RolloutConfig
from hindsight.rollout.engine import run_rollouts
from hindsight.rollout.env_pool import EnvFactory
from hindsight.rollout.tasks import TaskRef
from hindsight.world_model.transitions import is_heldout

POLICY_PREFIX = "policy/"
"""How the ids of the start policy's own episodes begin (``world_model_policy_episodes``)."""


def _draw(episode_id: str, share: float) -> bool:
    """A stable draw, apart from the held-out one, of an episode into ``share``."""
    digest = int(hashlib.sha1(f"share:{episode_id}".encode()).hexdigest()[:8], 16)
    return digest / 0xFFFFFFFF < share


def heldout_episodes(table: pd.DataFrame, heldout_fraction: float) -> pd.DataFrame:
    """The rows of the episodes of ``table`` that the world model holds out."""
    if table.empty:
        return table
    ids = pd.Series(table["episode_id"].unique())
    held = set(ids[ids.map(lambda episode_id: is_heldout(str(episode_id), heldout_fraction))])
    return table[table["episode_id"].isin(held)]


def shared_episodes(table: pd.DataFrame, share: float, heldout_fraction: float) -> pd.DataFrame:
    """The rows of the episodes of ``table`` the world model sees: every held-out one and a
    stable draw of ``share`` of the others (1: all; 0: the held-out ones only)."""
    if table.empty or share >= 1:
        return table
    ids = pd.Series(table["episode_id"].unique())
    kept = ids.map(lambda episode_id: is_heldout(str(episode_id), heldout_fraction) or _draw(str(episode_id), share))
    return table[table["episode_id"].isin(set(ids[kept]))]


def play_policy_episodes(
    policy: Policy, env_factory: EnvFactory, tasks: Sequence[TaskRef], config: RolloutConfig
) -> tuple[pd.DataFrame, dict[str, float]]:
    """The start policy's own episodes on the real environment (the rollout engine,
    ``config.group_size`` per task), with their real rewards and endings: the table, its
    episode ids marked ``POLICY_PREFIX`` (so that they never meet another source's ids of
    the same task), and the rollout's stats."""
    result = run_rollouts(policy, env_factory, tasks, config, policy_version=policy.version)
    return result.table.assign(episode_id=POLICY_PREFIX + result.table["episode_id"].astype(str)), result.stats


def episode_sources(table: pd.DataFrame) -> pd.Series:
    """Per row, its source for the world model: ``policy`` for the start policy's own
    episodes, ``random`` for random ones, else the row's ``source``."""
    ids = table["episode_id"].astype(str)
    named = table["source"].astype(str).where(~ids.str.startswith("random/"), "random")
    return named.where(~ids.str.startswith(POLICY_PREFIX), "policy")


def learnt_episodes(
    *, gold: pd.DataFrame, rollouts: pd.DataFrame, random: pd.DataFrame, policy: pd.DataFrame,
    gold_share: float, policy_share: float, heldout_fraction: float,
) -> pd.DataFrame:
    """Every source's episodes the world model sees, in one table (shares applied; pass an
    empty table for a source that is off)."""
    parts = [
        shared_episodes(gold, gold_share, heldout_fraction), rollouts, random,
        shared_episodes(policy, policy_share, heldout_fraction),
    ]
    kept = [part for part in parts if len(part)]
    if not kept:
        raise ValueError("world model: no episodes to learn from (every source is empty or off)")
    return pd.concat(kept, ignore_index=True)

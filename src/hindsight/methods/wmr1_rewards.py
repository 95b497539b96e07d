"""WM-R1's scores: the reward of each episode (``algorithms.wm_r1_rewards`` over its committed
steps and its imaginary world-model calls), the GRPO advantages taken from it, and the
metrics that show the mechanism ran in an update (``world_model/...``). The method that
uses them, its settings and what follows WM-R1's official code: ``methods.wmr1``."""

from __future__ import annotations

import pandas as pd
import torch

from hindsight import algorithms
from hindsight.data.outcomes import episode_outcomes
from hindsight.rollout.imagination import CALLS_COLUMN
from hindsight.training.positive_replay import REPLAY_SOURCE
from hindsight.world_model.environment import IMAGINE_PREFIX


def imagined_turns(table: pd.DataFrame) -> pd.Series:
    """Which rows are imagined turns (bool, aligned with ``table``)."""
    return table["action"].astype(str).str.startswith(IMAGINE_PREFIX)


def in_response_calls(table: pd.DataFrame) -> pd.Series:
    """Each row's in-response world-model calls (``rollout.imagination``; 0 without the column)."""
    if CALLS_COLUMN not in table.columns:
        return pd.Series(0, index=table.index, dtype="int64")
    return table[CALLS_COLUMN].fillna(0).astype("int64")


def world_model_calls(table: pd.DataFrame) -> pd.Series:
    """Each row's imaginary world-model calls, the ``n_wm`` that ``R_wm`` counts: its
    in-response calls plus 1 for an accepted imagined turn. A committed action (the world
    model as the transition function) is no call here, nor is a refused imagined turn; a
    replayed row keeps what it carries."""
    refused = ~table["action_valid"].astype(bool)
    return (imagined_turns(table) & ~refused).astype("int64") + in_response_calls(table)


def wmr1_scores(
    table: pd.DataFrame, max_steps: int, progress: float | None = None, *, n_wm_max: int = 5, mask_replayed_calls: bool = False,
    world_model_weight: float = 0.1,
) -> pd.Series:
    """The WM-R1 reward of each episode (indexed by ``episode_id``): ``algorithms.wm_r1_rewards``
    over its committed steps (budget ``max_steps``) and its imaginary world-model calls
    (``world_model_calls``, budget ``n_wm_max``), ``p`` the group's success rate, or the
    training ``progress`` when given (our reading). A replayed episode (source ``replay``) is
    scored like any other with the counts it carries; with ``mask_replayed_calls`` (the
    expert-episode replay source, our reading) it earns no world-model utilisation bonus;
    ``world_model_weight`` is R_wm's weight gamma."""
    outcomes = episode_outcomes(table, keys=["group_id"])
    counts = table.assign(call=world_model_calls(table), committed=~imagined_turns(table))
    counts = counts.groupby("episode_id")[["call", "committed"]].sum()
    replayed = set(table.loc[table["source"] == REPLAY_SOURCE, "episode_id"]) if mask_replayed_calls else set()
    rewards = algorithms.wm_r1_rewards(
        outcomes["episode_id"].map(counts["committed"]).tolist(), outcomes["success"].tolist(),
        outcomes["episode_id"].map(counts["call"]).tolist(), outcomes["group_id"].tolist(), max_length=max_steps, max_calls=n_wm_max,
        progress=progress, imagined=[episode not in replayed for episode in outcomes["episode_id"]],
        world_model_weight=world_model_weight,
    )
    return pd.Series(rewards.tolist(), index=outcomes["episode_id"].tolist())


def wmr1_sample_scores(table: pd.DataFrame, max_steps: int, progress: float | None = None, **counting) -> torch.Tensor:
    """Each step sample's WM-R1 reward [N] (rows of ``table``, in order; ``counting``:
    ``wmr1_scores``'s keywords)."""
    scores = table["episode_id"].map(wmr1_scores(table, max_steps, progress, **counting))
    return torch.tensor(scores.to_numpy(dtype="float64"), dtype=torch.float32)


def wmr1_advantages(table: pd.DataFrame, std_normalize: bool, max_steps: int, progress: float | None = None, **counting) -> torch.Tensor:
    """GRPO advantages [N] of the step samples (rows of ``table``, in order) from the WM-R1
    reward, statistics taken over trajectories."""
    return algorithms.group_normalized_advantages(
        wmr1_sample_scores(table, max_steps, progress, **counting), table["group_id"].tolist(),
        std_normalize=std_normalize, traj_ids=table["episode_id"].tolist(),
    )


def world_model_metrics(simulated: pd.DataFrame, replayed_groups: int, calls: int) -> dict[str, float]:
    """What shows the mechanism ran in one update."""
    outcomes = episode_outcomes(simulated, keys=["group_id"])
    group_success = outcomes.groupby("group_id")["success"].any()
    committed = ~imagined_turns(simulated) if len(simulated) else pd.Series(dtype=bool)
    return {
        "world_model/calls": float(calls),
        "world_model/simulated_steps": float(len(simulated)),
        "world_model/simulated_success_rate": float(outcomes["success"].mean()) if len(outcomes) else 0.0,
        "world_model/all_failure_groups": float((~group_success).sum()),
        "world_model/replayed_groups": float(replayed_groups),
        "world_model/imagined_turns": float(imagined_turns(simulated).sum()) if len(simulated) else 0.0,
        "world_model/calls_per_step": float(world_model_calls(simulated).sum() / committed.sum()) if committed.any() else 0.0,
    }

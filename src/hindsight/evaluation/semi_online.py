"""Semi-online metrics of EMPO (docs/fidelity.md, EMPO) and the per-update EMPO mechanism metrics.

Semi-online evaluation rolls the policy on held-out expert trajectories, conditioned on its
own history, and stops at the first mismatch (an ``ExpertReplayEnvironment`` with
``patch_threshold=0``): a trajectory is a success when every step matched, and its progress
is matched steps / trajectory length. No environment simulator is involved, so a
checkpoint can be scored where none is installed; the paper reports that the figure
correlates with online success (``benchmarks/empo_vs_grpo.py`` measures that here).
"""

from __future__ import annotations

import dataclasses
import pandas as pd

from hindsight.data.outcomes import episode_outcomes
from hindsight.envs.expert_replay import ReplaySet, replay_env_factory
from hindsight.policy import Policy
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.tasks import make_tasks


def semi_online_metrics(table: pd.DataFrame) -> dict[str, float]:
    """Success rate and mean progress of a semi-online rollout table.

    Args:
        table: Rollout rows of expert-replay episodes played with ``patch_threshold=0``
            (``won`` on the last step of a fully matched trajectory; ``score`` = matched
            steps / length after each step).

    Returns:
        ``semi_online/success_rate``, ``semi_online/mean_progress`` and
        ``semi_online/trajectories``.
    """
    if table.empty:
        return {"semi_online/success_rate": 0.0, "semi_online/mean_progress": 0.0, "semi_online/trajectories": 0.0}
    progress = table.sort_values(["episode_id", "step"]).groupby("episode_id", sort=True)["score"].last()
    success = episode_outcomes(table).set_index("episode_id")["success"].reindex(progress.index)
    return {
        "semi_online/success_rate": float(success.astype(float).mean()),
        "semi_online/mean_progress": float(progress.mean()),
        "semi_online/trajectories": float(len(progress)),
    }


def empo_rollout_metrics(table: pd.DataFrame) -> dict[str, float]:
    """What EMPO's mechanism did in one update's rollouts (expert-replay rows).

    Returns:
        ``empo/match_rate`` (steps whose action matched the expert), ``empo/patch_rate``
        (steps the Patch Module rewrote), ``empo/patched_episode_rate``, ``empo/mean_return``
        (mean episode sum of EMPO step rewards) and ``empo/mean_progress`` (mean final
        matched steps / trajectory length).
    """
    if table.empty:
        return {}
    patched = table["source"].eq("patched")
    outcomes = episode_outcomes(table)
    progress = table.sort_values(["episode_id", "step"]).groupby("episode_id")["score"].last()
    return {
        "empo/match_rate": float(table["action_valid"].astype(bool).mean()),
        "empo/patch_rate": float(patched.mean()),
        "empo/patched_episode_rate": float(table.assign(patched=patched).groupby("episode_id")["patched"].any().mean()),
        "empo/mean_return": float(outcomes["return"].mean()),
        "empo/mean_progress": float(progress.mean()),
    }


def evaluate_semi_online(policy: Policy, replay: ReplaySet, rollout: RolloutConfig, *, split: str = "test") -> dict[str, float]:
    """Semi-online success and progress of ``policy`` on every trajectory of ``replay``'s fold
    ``split`` (one episode each, stopping at the first mismatch).

    Args:
        policy: The policy to score.
        replay: The expert trajectories.
        rollout: Decoding settings (group size and patching are set here).
        split: The held-out fold.

    Returns:
        ``semi_online_metrics`` of the rollout (zeros when the fold is empty).
    """
    count = len(replay.by_split.get(split, []))
    if count == 0:
        return semi_online_metrics(pd.DataFrame())
    settings = dataclasses.replace(rollout, group_size=1, progress=False)
    tasks = make_tasks(replay.spec(), split, range(count))
    result = run_rollouts(policy, replay_env_factory(replay, patch_threshold=0), tasks, settings, source="rollout")
    return semi_online_metrics(result.table)

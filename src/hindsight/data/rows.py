"""The one builder of a trajectory-table row.

Expert collection (``hindsight.data.expert``), rollouts (``hindsight.rollout.live_episode``) and
external files (``hindsight.data.external``) all write their rows through
``trajectory_row``: what every step of an episode shares comes in one ``EpisodeFields``,
what the step adds comes as keywords, and the row's keys are ``TRAJECTORY_COLUMNS`` in
order, with numbers and flags in their canonical Python types.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

from hindsight.data.schema import TRAJECTORY_COLUMNS


@dataclass(frozen=True)
class EpisodeFields:
    """The fields every row of one episode shares (see ``TRAJECTORY_COLUMNS`` for meanings)."""

    episode_id: str
    group_id: str
    env: str
    task_type: str
    task: str
    split: str
    seed: int
    source: str
    policy_version: int


def trajectory_row(
    episode: EpisodeFields,
    *,
    step: int,
    observation: str,
    anchor_observation: str,
    valid_actions: Sequence[str],
    action: str,
    response: str,
    reward: float,
    score: float,
    done: bool,
    won: bool,
    action_valid: bool,
) -> dict[str, Any]:
    """One row of the trajectory table.

    Args:
        episode: The episode's shared fields.
        step: 0-based step index.
        observation: What the agent acted on.
        anchor_observation: The raw observation of the state, without history.
        valid_actions: The actions the environment listed.
        action: The action played.
        response: The raw output it was parsed from.
        reward: The step reward (as the environment or data source gave it).
        score: The environment's progress score after the step.
        done: The episode ended after this step.
        won: The task was solved on this step.
        action_valid: The environment accepted the action.

    Returns:
        ``{column: value}`` over ``TRAJECTORY_COLUMNS``, in that order.
    """
    values = {
        **dataclasses.asdict(episode),
        "seed": int(episode.seed),
        "policy_version": int(episode.policy_version),
        "step": int(step),
        "observation": observation,
        "anchor_observation": anchor_observation,
        "valid_actions": list(valid_actions),
        "action": action,
        "response": response,
        "reward": float(reward),
        "score": float(score),
        "done": bool(done),
        "won": bool(won),
        "action_valid": bool(action_valid),
    }
    return {name: values[name] for name in TRAJECTORY_COLUMNS}

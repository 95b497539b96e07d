"""The step reward every environment adapter and data source uses.

``reward = success_reward * won_now - invalid_penalty * (not action_valid)``: the task
reward arrives on the winning step only, and each invalid action costs a little (the SEED
paper's ALFWorld setting: 10 for a win, 0.1 per invalid action).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RewardConfig:
    """How a step is rewarded."""

    success_reward: float = 10.0
    """Reward on the step that solves the task."""
    invalid_penalty: float = 0.1
    """Subtracted on every step whose action the environment did not accept."""


def step_reward(won_now: bool, action_valid: bool, config: RewardConfig | None = None) -> float:
    """The reward of one step.

    Args:
        won_now: The task became solved on this step.
        action_valid: The environment accepted the action.
        config: Reward settings (defaults: 10 for a win, 0.1 penalty).

    Returns:
        ``success_reward * won_now - invalid_penalty * (not action_valid)``.
    """
    config = config or RewardConfig()
    return config.success_reward * float(bool(won_now)) - config.invalid_penalty * float(not action_valid)

"""Episode bookkeeping shared by the adapters: step count, termination, reward, info dict.

Every adapter ends a step the same way: the reward follows ``reward.step_reward``, the
episode *terminates* when the task is won or lost and is *truncated* when ``max_steps``
actions were played without either (invalid actions count: they are turns of the agent),
and the info dict carries the keys ``base.py`` lists. Keeping that here means the adapters
only translate their simulator's answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from hindsight.envs.reward import RewardConfig, step_reward


def make_info(
    *,
    task: str,
    task_type: str,
    valid_actions: Sequence[str],
    anchor_observation: str,
    won: bool,
    action_valid: bool,
    score: float,
    inventory: str,
    **extra: Any,
) -> dict[str, Any]:
    """The info dict every adapter returns (keys documented in ``hindsight.envs.base``).

    Args:
        task: The task text.
        task_type: The game / task family.
        valid_actions: The actions accepted now.
        anchor_observation: The raw observation of the current state.
        won: The task is solved.
        action_valid: The last action was accepted (True after reset).
        score: The environment's progress score.
        inventory: The inventory text ("" where there is none).
        **extra: Adapter-specific keys (e.g. ``lost``, ``moves``).

    Returns:
        The info dict.
    """
    return {
        "task": task,
        "task_type": task_type,
        "valid_actions": list(valid_actions),
        "anchor_observation": anchor_observation,
        "won": bool(won),
        "action_valid": bool(action_valid),
        "score": float(score),
        "inventory": inventory,
        **extra,
    }


@dataclass
class EpisodeTracker:
    """Counts the steps of the current episode and decides reward and termination."""

    max_steps: int
    reward_config: RewardConfig
    steps: int = 0
    active: bool = False
    finished: bool = False

    def start(self) -> None:
        """Begin a new episode (called by ``reset``)."""
        self.steps, self.active, self.finished = 0, True, False

    def check_can_step(self) -> None:
        """Raise ``RuntimeError`` when there is no running episode to step in."""
        if not self.active:
            raise RuntimeError("step() called before reset(); call reset(seed, split) first.")
        if self.finished:
            raise RuntimeError("step() called after the episode ended; call reset(seed, split).")

    def record(self, won_now: bool, lost: bool, action_valid: bool) -> tuple[float, bool, bool]:
        """Count one step and return (reward, terminated, truncated).

        Args:
            won_now: The task became solved on this step.
            lost: The task can no longer be solved (the environment's failure state).
            action_valid: The environment accepted the action.
        """
        self.steps += 1
        terminated = bool(won_now or lost)
        truncated = (not terminated) and self.steps >= self.max_steps
        self.finished = terminated or truncated
        return step_reward(won_now, action_valid, self.reward_config), terminated, truncated

    def stop(self) -> None:
        """Forget the episode (after a crash or restart, the next call must be ``reset``)."""
        self.active, self.finished = False, False

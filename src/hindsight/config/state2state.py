"""Settings of the State2State mid-training stage (``parameters_state2state.yml``).

Kept in its own module so the stage adds one file to ``hindsight.config`` and one line to
``STAGE_FILES``. What the stage does: ``hindsight.state2state``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindsight.config.stages import HeldoutPlay
from hindsight.methods.registry import build_method, check_method_settings
from hindsight.training.rl_config import RLConfig


def _state2state_rl() -> RLConfig:
    return RLConfig(algorithm="grpo", updates=4, tasks_per_update=8, group_size=4)


@dataclass
class State2StateConfig:
    """``parameters_state2state.yml``: explore -> goal tasks -> RL on them, from the base policy."""

    tasks_per_game: int = 20
    """Task instances explored per game: the first train-fold seeds (held-out "seen" seeds
    start at ``environment.seen_seed_offset`` and are never explored)."""
    random_episodes: int = 4
    """Random-valid-action exploration episodes per explored instance."""
    policy_episodes: int = 2
    """Base-policy exploration episodes per explored instance (sampled at ``rollout.sampling.temperature``)."""
    facts_per_goal: int = 2
    """Most facts in one goal (drawn from the facts that hold in a reached state and not at the start)."""
    max_tasks: int = 200
    """Most goal tasks kept in the task set."""
    checkpoint_root: str = "data/06_models/state2state_checkpoints"
    """RL checkpoints, under a fingerprint of the settings, the task set and the starting weights."""
    heldout: HeldoutPlay = field(default_factory=lambda: HeldoutPlay(episodes_per_game=8))
    """Held-out evaluation on the real tasks during the stage (every ``rl.eval_every`` updates)."""
    rl: RLConfig = field(default_factory=_state2state_rl)
    """RL on the goal tasks; a method without skills (grpo | gigpo): goals have no hindsight skills."""

    def __post_init__(self) -> None:
        for name in ("tasks_per_game", "facts_per_goal", "max_tasks"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"state2state.{name} must be a positive integer, got {value!r}")
        for name in ("random_episodes", "policy_episodes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"state2state.{name} must be a non-negative integer, got {value!r}")
        if self.random_episodes + self.policy_episodes == 0:
            raise ValueError("state2state: random_episodes and policy_episodes are both 0: nothing explores")
        check_method_settings(self.rl, "state2state.rl")
        if build_method(self.rl).uses_skills:
            raise ValueError(
                f"state2state.rl.algorithm={self.rl.algorithm!r} distils from skills; goal tasks have none: use grpo or gigpo"
            )

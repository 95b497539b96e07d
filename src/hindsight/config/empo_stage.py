"""Settings of the EMPO stage (``parameters_empo.yml``): which expert trajectories replay
as the environment, how the Patch Module repairs a mismatch, the held-out share scored
semi-online, and the RL settings of the run.

Kept in its own module so the stage adds one file to ``hindsight.config`` and one line to
``STAGE_FILES``. What the stage does: ``hindsight.runs.empo_run`` (which reads these
settings without importing this layer, ``EmpoSettings``) and ``kedro run --pipeline empo``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindsight.methods.registry import check_method_settings, method_class
from hindsight.training.rl_config import RLConfig


def _empo_rl() -> RLConfig:
    return RLConfig(algorithm="empo", eval_every=2)


@dataclass
class EmpoConfig:
    """The transition source (which trajectories, how patching works), held-out semi-online
    evaluation, and the RL settings of the EMPO run."""

    successful_only: bool = True
    """Replay only episodes with a won step (failed demonstrations are not expert behaviour)."""
    heldout_fraction: float = 0.25
    """Share of the train-fold expert trajectories held out for semi-online evaluation
    (shuffled with the run's seed; dev/test-fold trajectories are always held out)."""
    patch_threshold: int = 2
    """Mismatches the Patch Module repairs per trajectory; the next one ends it (paper: 2)."""
    include_thought: bool = True
    """A patch puts the expert's thought (where the trajectory has one) before its action
    in the history."""
    max_candidates: int = 12
    """Decoder candidates of a step whose trajectory recorded no valid actions: the
    expert action plus the task type's other observed actions."""
    checkpoint_root: str = "data/06_models/empo_checkpoints"
    """Checkpoints live under a fingerprint of the run's settings and starting weights."""
    rl: RLConfig = field(default_factory=_empo_rl)
    """RL settings; ``algorithm`` must be empo; ``eval_every``: semi-online evaluation period."""

    def __post_init__(self) -> None:
        if method_class(self.rl.algorithm).transition_source != "expert_replay":
            raise ValueError(f"empo.rl.algorithm must be a method that plays expert replay (empo), got {self.rl.algorithm!r}")
        check_method_settings(self.rl, "empo.rl")
        if not 0 <= self.heldout_fraction < 1:
            raise ValueError(f"empo.heldout_fraction must be in [0, 1), got {self.heldout_fraction}")
        if self.patch_threshold < 0:
            raise ValueError(f"empo.patch_threshold must be >= 0, got {self.patch_threshold}")
        if self.max_candidates < 1:
            raise ValueError(f"empo.max_candidates must be >= 1, got {self.max_candidates}")

"""Text environments behind one Gymnasium-style interface (``base.TextEnvironment``).

``make_env(spec)`` builds one: TextWorldExpress, ScienceWorld, TextWorld (games generated
locally) or ALFWorld (where installed). Each adapter's module docstring says how it treats
invalid actions, what it costs, and how it recovers from a crash; what the adapters share
(episode bookkeeping, the guarded JVM or engine calls, restart and close) is in ``adapter``.
"""

from hindsight.envs.base import (
    SPLITS,
    EnvironmentConfigError,
    EnvironmentCrashedError,
    EnvironmentSpec,
    StepResult,
    TextEnvironment,
)
from hindsight.envs.java import check_java
from hindsight.envs.registry import SUPPORTED_ENVS, make_env, spec_from_params
from hindsight.envs.reward import RewardConfig, step_reward

__all__ = [
    "SPLITS",
    "SUPPORTED_ENVS",
    "EnvironmentConfigError",
    "EnvironmentCrashedError",
    "EnvironmentSpec",
    "RewardConfig",
    "StepResult",
    "TextEnvironment",
    "check_java",
    "make_env",
    "spec_from_params",
    "step_reward",
]

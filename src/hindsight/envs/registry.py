"""Build an environment from its spec: the one place that maps family names to adapters.

Adapters are imported only when their family is asked for, so importing ``hindsight.envs``
does not start a JVM or import TextWorld, and a missing optional package (ALFWorld) only
matters to the user who asks for it.
"""

from __future__ import annotations

import importlib
import logging

from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec, TextEnvironment
from hindsight.envs.reward import RewardConfig

logger = logging.getLogger(__name__)

ENV_FAMILIES: dict[str, tuple[str, str]] = {
    "textworldexpress": ("hindsight.envs.textworldexpress", "TextWorldExpressEnvironment"),
    "scienceworld": ("hindsight.envs.scienceworld", "ScienceWorldEnvironment"),
    "textworld": ("hindsight.envs.textworld_env", "TextWorldEnvironment"),
    "alfworld": ("hindsight.envs.alfworld", "AlfWorldEnvironment"),
    "dual_control": ("hindsight.envs.dual_control.env", "DualControlEnvironment"),
    "miniwob": ("hindsight.envs.miniwob.env", "MiniWobEnvironment"),
    "gym": ("hindsight.envs.gym_adapter", "GymTextEnvironment"),
}
"""Environment family name -> (module, adapter class)."""

SUPPORTED_ENVS: tuple[str, ...] = tuple(ENV_FAMILIES)


def make_env(spec: EnvironmentSpec, reward: RewardConfig | None = None) -> TextEnvironment:
    """Build the environment ``spec`` describes.

    Args:
        spec: Family (``spec.env``), game, parameters, step limit and reward settings.
        reward: Overrides ``spec.reward``.

    Returns:
        A ready environment; call ``reset(seed, split)`` before ``step``.

    Raises:
        EnvironmentConfigError: Unknown family, game or parameter, or a missing dependency.
    """
    if spec.env not in ENV_FAMILIES:
        raise EnvironmentConfigError(
            f"Unknown environment family {spec.env!r}; supported: {', '.join(SUPPORTED_ENVS)}."
        )
    if not isinstance(spec.max_steps, int) or isinstance(spec.max_steps, bool) or spec.max_steps < 1:
        raise EnvironmentConfigError(f"max_steps must be a positive integer, got {spec.max_steps!r}.")
    timeout = spec.step_timeout_s
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise EnvironmentConfigError(f"step_timeout_s must be a positive number of seconds or None, got {timeout!r}.")
    module_name, class_name = ENV_FAMILIES[spec.env]
    adapter = getattr(importlib.import_module(module_name), class_name)
    return adapter(spec, reward=reward or spec.reward)


def spec_from_params(params: dict) -> EnvironmentSpec:
    """An ``EnvironmentSpec`` from a parameters dict (``env``, ``game``, ``params``,
    ``max_steps``, ``step_timeout_s``), as written in ``parameters_*.yml``.

    Raises:
        EnvironmentConfigError: A key is missing or unknown.
    """
    known = {"env", "game", "params", "max_steps", "step_timeout_s"}
    unknown = sorted(set(params) - known)
    missing = sorted({"env", "game"} - set(params))
    if unknown or missing:
        problems = ([f"missing {missing}"] if missing else []) + ([f"unknown {unknown}"] if unknown else [])
        raise EnvironmentConfigError(
            f"Bad environment spec {params!r}: {'; '.join(problems)} (keys: env, game, params, max_steps, step_timeout_s)."
        )
    return EnvironmentSpec(
        env=params["env"],
        game=params["game"],
        params=dict(params.get("params") or {}),
        max_steps=params.get("max_steps", 30),
        step_timeout_s=params.get("step_timeout_s", EnvironmentSpec.step_timeout_s),
    )

"""Turn Kedro parameter dictionaries into the library's typed settings.

Nodes receive plain dictionaries from ``conf/*/parameters*.yml``; the library takes
dataclasses. The conversion lives here once, so every pipeline reads the shared
``environment``, ``prompt`` and ``reward`` blocks the same way.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.reward import RewardConfig
from hindsight.policy.prompts import PromptConfig


T = TypeVar("T")


def dataclass_from_params(cls: type[T], params: dict[str, Any] | None, block: str) -> T:
    """Build a settings dataclass from a parameter block, naming any unknown key.

    Args:
        cls: The dataclass.
        params: The parameter dictionary (None means all defaults).
        block: The parameter block's name, for the error message.
    """
    params = dict(params or {})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in parameters '{block}'; known: {sorted(known)}")
    return cls(**params)


def environment_specs(environment: dict[str, Any]) -> list[EnvironmentSpec]:
    """One ``EnvironmentSpec`` per game of the ``environment`` parameter block.

    Args:
        environment: ``{"env": ..., "max_steps": ..., "games": [{"game": ..., "params": {...}}]}``.

    Returns:
        The specs, in the order of ``games``.
    """
    if not environment.get("games"):
        raise ValueError("parameters 'environment.games' must list at least one game")
    specs = []
    for index, game in enumerate(environment["games"]):
        if "game" not in game:
            raise ValueError(f"parameters 'environment.games[{index}]' has no 'game' field")
        specs.append(
            EnvironmentSpec(
                env=environment["env"],
                game=game["game"],
                params=dict(game.get("params") or {}),
                max_steps=int(game.get("max_steps", environment.get("max_steps", 30))),
            )
        )
    return specs


def prompt_config(prompt: dict[str, Any] | None) -> PromptConfig:
    """``PromptConfig`` from the ``prompt`` parameter block."""
    return PromptConfig.from_params(prompt)


def reward_config(reward: dict[str, Any] | None) -> RewardConfig:
    """``RewardConfig`` from the ``reward`` parameter block."""
    return RewardConfig(**(reward or {}))


def rollout_config(
    rollout: dict[str, Any] | None,
    prompt: dict[str, Any] | None,
    reward: dict[str, Any] | None,
    environment: dict[str, Any] | None = None,
):
    """``RolloutConfig`` from the ``rollout`` block plus the shared ``prompt`` and ``reward``
    blocks (the episode step limit comes from each game's spec unless ``rollout.max_steps``)."""
    from hindsight.rollout.engine import RolloutConfig

    values = dict(rollout or {})
    unknown = sorted(set(values) - {f.name for f in fields(RolloutConfig)})
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in parameters 'rollout'")
    return RolloutConfig(**{**values, "prompt": prompt_config(prompt), "reward": reward_config(reward)})

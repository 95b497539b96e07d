"""Expert demonstrations: play each environment's gold action sequence into the trajectory table.

For every spec, split and seed, the gold sequence is played step by step through the same
adapter the agent uses, so the rows carry exactly what a policy would have seen (observation,
valid actions, reward under ``RewardConfig``) with ``source="expert"`` and
``policy_version=-1``. The episode ends when the environment says so (won, lost, or
``max_steps``), or when the gold sequence runs out (then the last row gets ``done=True``).
A gold path that does not win is kept (``won`` stays False) and counted in a warning.

An environment that renders a screen (``TextEnvironment.screenshot()`` is not None) also
gives each step's screen, the one the gold action was played on: ``collect_expert_episodes``
returns them as the screenshot table (``hindsight.data.screenshots``), keyed by the rows'
episode and step; a text environment's is empty.

Speed: TextWorldExpress plays 200 twc + cookingworld gold episodes in about a second after
the JVM is up; ScienceWorld and TextWorld are slower (task loading / game generation).
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

import pandas as pd

from hindsight.data.rows import EpisodeFields, trajectory_row
from hindsight.data.schema import TRAJECTORY_COLUMNS, make_group_id, validate_trajectories
from hindsight.data.screenshots import screenshot_row, screenshot_table, validate_screenshots
from hindsight.envs.base import EnvironmentConfigError, EnvironmentCrashedError, EnvironmentSpec, TextEnvironment
from hindsight.envs.registry import make_env
from hindsight.envs.reward import RewardConfig

logger = logging.getLogger(__name__)

EXPERT_SOURCE = "expert"
EXPERT_POLICY_VERSION = -1


def play_gold_episode(
    env: TextEnvironment, spec: EnvironmentSpec, split: str, seed: int, screenshots: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Play the gold sequence of task (``split``, ``seed``) and return its table rows.

    Args:
        env: An environment built from ``spec``.
        spec: The spec (its family and game name the ``group_id``).
        split: The fold.
        seed: The task seed inside the fold.
        screenshots: When given, each step's screen (before its action) is appended to it as
            a screenshot-table row, if the environment renders one.

    Returns:
        One dict per step with every column of ``TRAJECTORY_COLUMNS``.
    """
    observation, info = env.reset(seed, split)
    group_id = make_group_id(spec.env, spec.game, split, seed)
    episode = EpisodeFields(
        episode_id=f"{group_id}/{EXPERT_SOURCE}",
        group_id=group_id,
        env=spec.env,
        task_type=info["task_type"],
        task=info["task"],
        split=split,
        seed=int(seed),
        source=EXPERT_SOURCE,
        policy_version=EXPERT_POLICY_VERSION,
    )
    rows: list[dict[str, Any]] = []
    won_before = bool(info["won"])
    for step, action in enumerate(env.gold_actions()):
        acted_on, acted_info = observation, info
        screen = env.screenshot() if screenshots is not None else None
        if screen is not None:
            screenshots.append(screenshot_row(episode.episode_id, step, screen))
        observation, reward, terminated, truncated, info = env.step(action)
        won_now = bool(info["won"]) and not won_before
        won_before = won_before or won_now
        rows.append(
            trajectory_row(
                episode,
                step=step,
                observation=acted_on,
                anchor_observation=acted_info["anchor_observation"],
                valid_actions=acted_info["valid_actions"],
                action=action,
                response=action,
                reward=reward,
                score=info["score"],
                done=terminated or truncated,
                won=won_now,
                action_valid=info["action_valid"],
            )
        )
        if terminated or truncated:
            break
    if rows:
        rows[-1]["done"] = True
    return rows


def _play_with_retry(
    env: TextEnvironment, spec: EnvironmentSpec, split: str, seed: int, screenshots: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    screens: list[dict[str, Any]] | None = [] if screenshots is not None else None
    try:
        rows = play_gold_episode(env, spec, split, seed, screens)
    except EnvironmentCrashedError as error:
        logger.warning(
            "%s/%s %s seed %s: backend crashed (%s); restarting once", spec.env, spec.game, split, seed, error
        )
        env.restart()
        screens = [] if screenshots is not None else None  # the crashed try's screens are dropped
        rows = play_gold_episode(env, spec, split, seed, screens)
    if screenshots is not None:
        screenshots.extend(screens)
    return rows


def _check_unique_games(specs: Iterable[EnvironmentSpec]) -> None:
    seen: set[tuple[str, str]] = set()
    for spec in specs:
        key = (spec.env, spec.game)
        if key in seen:
            raise EnvironmentConfigError(
                f"Two specs for {spec.env}/{spec.game}: their group ids would collide; collect "
                "them into separate tables."
            )
        seen.add(key)


def collect_expert_trajectories(
    specs: list[EnvironmentSpec],
    episodes_per_split: dict[str, int],
    reward: RewardConfig | None = None,
    seed_offset: int = 0,
) -> pd.DataFrame:
    """The trajectory table of ``collect_expert_episodes`` (no screenshot is taken)."""
    return _collect(specs, episodes_per_split, reward, seed_offset, None)


def collect_expert_episodes(
    specs: list[EnvironmentSpec],
    episodes_per_split: dict[str, int],
    reward: RewardConfig | None = None,
    seed_offset: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play the gold sequence of ``episodes_per_split[split]`` tasks per spec and split.

    Args:
        specs: The environments and games (one spec per env/game pair).
        episodes_per_split: How many tasks per split, e.g. ``{"train": 100, "dev": 20}``.
        reward: Step reward settings (default ``RewardConfig()``).
        seed_offset: Position in each split's seed list to start from.

    Returns:
        The validated trajectory table (``source="expert"``, ``policy_version=-1``) and the
        screenshot table of the steps of environments that render a screen (empty for text
        environments).
    """
    screenshots: list[dict[str, Any]] = []
    table = _collect(specs, episodes_per_split, reward, seed_offset, screenshots)
    return table, validate_screenshots(screenshot_table(screenshots), origin="expert collection", steps=table)


def _collect(
    specs: list[EnvironmentSpec],
    episodes_per_split: dict[str, int],
    reward: RewardConfig | None,
    seed_offset: int,
    screenshots: list[dict[str, Any]] | None,
) -> pd.DataFrame:
    """Play the gold sequence of ``episodes_per_split[split]`` tasks per spec and split.

    Args:
        specs: The environments and games (one spec per env/game pair).
        episodes_per_split: How many tasks per split, e.g. ``{"train": 100, "dev": 20}``.
        reward: Step reward settings (default ``RewardConfig()``).
        seed_offset: Position in each split's seed list to start from (tasks before it are
            left for other uses, e.g. held-out "seen" evaluation).
        screenshots: When given, the screens of environments that render one are appended
            to it (screenshot-table rows).

    Returns:
        The validated trajectory table (``source="expert"``, ``policy_version=-1``).
    """
    _check_unique_games(specs)
    reward = reward or RewardConfig()
    rows: list[dict[str, Any]] = []
    wanted = sum(int(count) for count in episodes_per_split.values())
    for spec in specs if wanted else ():  # no episode asked for: no simulator is built (EMPO on external files)
        env = make_env(spec, reward=reward)
        try:
            for split, count in episodes_per_split.items():
                spec_rows: list[dict[str, Any]] = []
                failures = 0
                for seed in env.seeds(split, int(count), seed_offset):
                    episode_rows = _play_with_retry(env, spec, split, seed, screenshots)
                    failures += not any(row["won"] for row in episode_rows)
                    spec_rows.extend(episode_rows)
                if failures:
                    logger.warning("%s/%s %s: %d gold episode(s) did not win", spec.env, spec.game, split, failures)
                logger.info("%s/%s %s: %d expert episodes, %d steps", spec.env, spec.game, split, count, len(spec_rows))
                rows.extend(spec_rows)
        finally:
            env.close()
    table = pd.DataFrame(rows, columns=list(TRAJECTORY_COLUMNS))
    return validate_trajectories(table, origin="expert collection")


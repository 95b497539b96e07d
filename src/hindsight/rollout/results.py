"""A rollout's result, assembled once the turn loop is done (``rollout.engine``).

``RolloutResult`` is what ``run_rollouts`` returns; ``RolloutTimer`` collects the engine's
timings and token counts while it plays; ``finished_table`` puts the finished episodes in
plan order as the step table (fault and engine counts in its ``attrs``) with their step
samples; ``result_stats`` sums them up (``RolloutResult.stats``) and ``log_result`` logs
one line of it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pandas as pd

from hindsight.policy.encoding import StepSample
from hindsight.rollout.faults import RolloutFaults
from hindsight.rollout.imagination import CALLS_COLUMN
from hindsight.rollout.live_episode import TABLE_COLUMNS, Episode
from hindsight.rollout.stats import ENGINE_ATTR, FAULTS_ATTR, rollout_stats

logger = logging.getLogger(__name__)


@dataclass
class RolloutResult:
    """Rollout output: the table (one row per step), the samples (same order), the stats,
    and the episodes the environment failed under (not in the table)."""

    table: pd.DataFrame
    samples: list[StepSample]
    """One per table row (same order), as the trainer consumes them."""
    stats: dict[str, float]
    faults: RolloutFaults = field(default_factory=RolloutFaults)
    """Replayed tries, episodes given up (with their reasons) and environment restarts
    (``faults``)."""


@dataclass
class RolloutTimer:
    """What the engine counts while it plays: seconds in generation, in the environment and
    in the weight sync, tokens generated and read, prompts truncated, contexts re-read."""

    generation: float = 0.0
    environment: float = 0.0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    truncated_prompts: int = 0
    context_reprefills: int = 0
    weight_sync: float = 0.0


def finished_table(
    finished: list[tuple[int, Episode, list[StepSample]]], faults: RolloutFaults, timer: RolloutTimer, imagined: bool = False
) -> tuple[pd.DataFrame, list[StepSample]]:
    """The finished episodes in plan order as the step table (fault and engine metrics in its
    ``attrs``) and the step samples, one per table row in the same order."""
    finished.sort(key=lambda item: item[0])
    rows = [row for _, episode, _ in finished for row in episode.rows]
    samples = [sample for _, _, episode_samples in finished for sample in episode_samples]
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS + ([CALLS_COLUMN] if imagined else []))
    table.attrs[FAULTS_ATTR] = faults.metrics()
    table.attrs[ENGINE_ATTR] = {
        "rollout/context_reprefills": float(timer.context_reprefills),
        "rollout/weight_sync_s": timer.weight_sync,
    }
    return table, samples


def result_stats(table: pd.DataFrame, faults: RolloutFaults, timer: RolloutTimer, wall: float) -> dict[str, float]:
    """``RolloutResult.stats``: the table's rollout stats, the fault counts and the timings
    and throughputs of the run (``wall`` seconds in all)."""
    stats = rollout_stats(table)
    stats.update(faults.stats())
    stats.update(
        wall_seconds=wall,
        generation_seconds=timer.generation,
        env_seconds=timer.environment,
        env_steps_per_s=len(table) / wall if wall > 0 else 0.0,
        generated_tokens=float(timer.generated_tokens),
        generated_tokens_per_s=timer.generated_tokens / wall if wall > 0 else 0.0,
        mean_prompt_tokens=timer.prompt_tokens / max(len(table), 1),
        truncated_prompts=float(timer.truncated_prompts),
        context_reprefills=float(timer.context_reprefills),
        weight_sync_seconds=timer.weight_sync,
    )
    return stats


def log_result(stats: dict[str, float]) -> None:
    """One log line summing up a rollout."""
    logger.info(
        "Rollouts: %d episodes, success %.3f, %.1f steps/episode, %.1f env steps/s, %.0f tokens/s.",
        stats["episodes"],
        stats["success_rate"],
        stats["mean_steps"],
        stats["env_steps_per_s"],
        stats["generated_tokens_per_s"],
    )

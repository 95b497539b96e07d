"""Trajectory data: the table schema and its check, expert demonstrations from the
environments' gold paths, external files (own schema or agent-SFT conversations), and the
episode-level summaries derived from the table."""

from hindsight.data.episodes import ingestion_counts, summarize_episodes
from hindsight.data.expert import collect_expert_trajectories
from hindsight.data.external import load_external_trajectories
from hindsight.data.schema import (
    EPISODE_SUMMARY_COLUMNS,
    TRAJECTORY_COLUMNS,
    TrajectoryValidationError,
    empty_episode_summary,
    empty_trajectory_table,
    make_group_id,
    validate_episode_summary,
    validate_trajectories,
)

__all__ = [
    "EPISODE_SUMMARY_COLUMNS",
    "TRAJECTORY_COLUMNS",
    "TrajectoryValidationError",
    "collect_expert_trajectories",
    "empty_episode_summary",
    "empty_trajectory_table",
    "ingestion_counts",
    "load_external_trajectories",
    "make_group_id",
    "summarize_episodes",
    "validate_episode_summary",
    "validate_trajectories",
]

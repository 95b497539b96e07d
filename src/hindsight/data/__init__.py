"""Trajectory data: the tables' columns and their check (``schema``), the one row builder
(``rows``), expert demonstrations from the environments' gold paths (``expert``), external
files (``external``, with ``conversations`` for agent-SFT conversations; ``external_files``
reads one ``ingestion.external_files`` entry, ``gui_trajectories`` GUI episodes with their
images), the screens of GUI steps (``screenshots``), and the episode-level outcomes and
summaries derived from the table (``outcomes``)."""

from hindsight.data.outcomes import episode_outcomes, ingestion_counts, summarize_episodes
from hindsight.data.expert import collect_expert_trajectories
from hindsight.data.external import load_external_trajectories
from hindsight.data.rows import EpisodeFields, trajectory_row
from hindsight.data.schema import (
    EPISODE_OUTCOME_COLUMNS,
    EPISODE_SUMMARY_COLUMNS,
    ROLLOUT_COLUMNS,
    SKILLS_TABLE_COLUMNS,
    TRAJECTORY_COLUMNS,
    TrajectoryValidationError,
    empty_episode_summary,
    empty_trajectory_table,
    make_group_id,
    typed_table,
    validate_episode_summary,
    validate_trajectories,
)

__all__ = [
    "EPISODE_OUTCOME_COLUMNS",
    "EPISODE_SUMMARY_COLUMNS",
    "ROLLOUT_COLUMNS",
    "SKILLS_TABLE_COLUMNS",
    "TRAJECTORY_COLUMNS",
    "EpisodeFields",
    "TrajectoryValidationError",
    "collect_expert_trajectories",
    "empty_episode_summary",
    "empty_trajectory_table",
    "episode_outcomes",
    "ingestion_counts",
    "load_external_trajectories",
    "make_group_id",
    "summarize_episodes",
    "trajectory_row",
    "typed_table",
    "validate_episode_summary",
    "validate_trajectories",
]

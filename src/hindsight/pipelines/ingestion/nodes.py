"""Nodes of the ingestion pipeline: thin wrappers over ``hindsight.data``.

Every row that enters the project is validated here, at the boundary. The external files
are read first (the slow expert collection waits for them), and the versioned tables are
all returned by the last check (``combine_trajectories``): a bad file, or external episode
ids that clash, raise before any output is saved, so a failed run writes no dataset version.
"""

from __future__ import annotations

import logging
from pathlib import Path
import pandas as pd

from hindsight import tracking
from hindsight.config import IngestionConfig, ProjectConfig
from hindsight.data import expert, external
from hindsight.data.conversations import OUTCOME_ASSUMED
from hindsight.data.outcomes import ingestion_counts, summarize_episodes
from hindsight.data.schema import TrajectoryValidationError, empty_trajectory_table, validate_trajectories

logger = logging.getLogger(__name__)


def collect_expert_trajectories(
    project: ProjectConfig, ingestion: IngestionConfig, external_checked: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Play the gold action sequence on N tasks per game and fold.

    Args:
        project: The shared settings (environment, games, max steps, reward).
        ingestion: ``expert_episodes``: episodes per fold, e.g. ``{"train": 100}``.
        external_checked: The loaded external table, unused: in the pipeline it makes Kedro
            run this slow node after every external file was read, so a bad file stops the
            run at once.

    Returns:
        The expert trajectory table (``source="expert"``).
    """
    table = expert.collect_expert_trajectories(
        project.specs(),
        episodes_per_split=dict(ingestion.expert_episodes),
        reward=project.environment.reward,
    )
    logger.info("Collected %d expert episodes (%d steps)", table["episode_id"].nunique(), len(table))
    return table


def load_external_trajectories(project: ProjectConfig, ingestion: IngestionConfig) -> pd.DataFrame:
    """Load and validate every external trajectory file named in the parameters.

    Args:
        project: The shared settings (the step reward of conversation episodes).
        ingestion: ``external_files``: paths (JSONL / JSON / parquet); ``external_source``:
            the ``source`` given to conversation-format episodes.

    Returns:
        The concatenated external trajectories (empty when no file is named).
    """
    tables, assumed_total = [], 0
    file_of_episode: dict[str, str] = {}
    for path in ingestion.external_files:
        table = external.load_external_trajectories(
            Path(path), reward=project.environment.reward, assume_success=ingestion.assume_success,
            source=ingestion.external_source,
        )
        for episode in table["episode_id"].unique().tolist():
            if episode in file_of_episode:
                raise TrajectoryValidationError(
                    f"{path}, field 'episode_id': episode {episode!r} is also in {file_of_episode[episode]}; "
                    "episode ids must be unique across the external files."
                )
            file_of_episode[episode] = str(path)
        assumed = int(table.attrs.get(OUTCOME_ASSUMED, 0))
        logger.info("Loaded %d steps from %s (%d episodes without an outcome field, assumed %s)",
                    len(table), path, assumed, "won" if ingestion.assume_success else "lost")
        assumed_total += assumed
        tables.append(table)
    tracking.log_metrics({"ingestion/outcome_assumed_episodes": float(assumed_total)})
    if not tables:
        return empty_trajectory_table()
    return pd.concat(tables, ignore_index=True)


def combine_trajectories(
    expert_table: pd.DataFrame, external_table: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Concatenate the sources into one validated trajectory table and log its counts.

    Returns:
        The expert table, the external table and the combined one, the three versioned
        outputs, saved together only once everything is checked.
    """
    parts = [table for table in (expert_table, external_table) if len(table)]
    combined = pd.concat(parts, ignore_index=True) if parts else empty_trajectory_table()
    clashing = set(expert_table["episode_id"]) & set(external_table["episode_id"])
    if clashing:
        raise ValueError(
            f"external trajectories reuse expert episode ids (field 'episode_id'): {sorted(clashing)[:5]}"
        )
    combined = validate_trajectories(combined, origin="trajectories")
    tracking.log_metrics(ingestion_counts(combined))
    return expert_table, external_table, combined


def summarize_trajectories(trajectories: pd.DataFrame) -> pd.DataFrame:
    """One row per episode (length, return, success), derived from the step table."""
    return summarize_episodes(trajectories)

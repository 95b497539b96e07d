"""Nodes of the ingestion pipeline: thin wrappers over ``hindsight.data``.

Every row that enters the project is validated here, at the boundary. The external files
are read first (the slow expert collection waits for them), and the versioned tables are
all returned by the last check (``combine_trajectories``): a bad file, or external episode
ids that clash, raise before any output is saved, so a failed run writes no dataset version.

Screenshots travel beside the steps, never inside them: the expert collection and the GUI
files give a screenshot table each (``hindsight.data.screenshots``; empty for text
environments and for files without screens), and ``combine_trajectories`` returns their
union as the versioned ``screenshots`` dataset, keyed by the trajectory rows' episode and
step. A text run writes an empty screenshot table, so the versions of the trajectories and
of their screens always come in pairs, whatever the configuration (GUI files may be
ingested under any environment).
"""

from __future__ import annotations

import logging
import pandas as pd

from hindsight import tracking
from hindsight.config import IngestionConfig, ProjectConfig
from hindsight.data import expert
from hindsight.data.conversations import OUTCOME_ASSUMED
from hindsight.data.external_files import as_external_file, load_external_file
from hindsight.data.outcomes import ingestion_counts, summarize_episodes
from hindsight.data.schema import (
    TrajectoryValidationError,
    empty_screenshot_table,
    empty_trajectory_table,
    validate_trajectories,
)
from hindsight.data.screenshots import validate_screenshots

logger = logging.getLogger(__name__)


def collect_expert_trajectories(
    project: ProjectConfig, ingestion: IngestionConfig, external_checked: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play the gold action sequence on N tasks per game and fold.

    Args:
        project: The shared settings (environment, games, max steps, reward).
        ingestion: ``expert_episodes``: episodes per fold, e.g. ``{"train": 100}``.
        external_checked: The loaded external table, unused: in the pipeline it makes Kedro
            run this slow node after every external file was read, so a bad file stops the
            run at once.

    Returns:
        The expert trajectory table (``source="expert"``) and its screenshots (empty for
        text environments).
    """
    table, screenshots = expert.collect_expert_episodes(
        project.specs(),
        episodes_per_split=dict(ingestion.expert_episodes),
        reward=project.environment.reward,
    )
    logger.info("Collected %d expert episodes (%d steps, %d screenshots)", table["episode_id"].nunique(), len(table), len(screenshots))
    return table, screenshots


def load_external_trajectories(project: ProjectConfig, ingestion: IngestionConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load and validate every external trajectory file named in the parameters.

    Args:
        project: The shared settings (the step reward of conversation episodes).
        ingestion: ``external_files``: paths (JSONL / JSON / parquet) or ``{path, format,
            images}`` entries (``format: gui``: GUI episodes with screenshots);
            ``external_source``: the ``source`` given to conversation-format and GUI episodes.

    Returns:
        The concatenated external trajectories and their screenshots (each empty when no
        file gives any).
    """
    tables, screens, assumed_total = [], [], 0
    file_of_episode: dict[str, str] = {}
    for entry in ingestion.external_files:
        path = as_external_file(entry).path
        table, screenshots = load_external_file(
            entry, reward=project.environment.reward, assume_success=ingestion.assume_success,
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
        screens.append(screenshots)
    tracking.log_metrics({"ingestion/outcome_assumed_episodes": float(assumed_total)})
    if not tables:
        return empty_trajectory_table(), empty_screenshot_table()
    return pd.concat(tables, ignore_index=True), _concat_screenshots(screens)


def _concat_screenshots(tables: list[pd.DataFrame]) -> pd.DataFrame:
    parts = [table for table in tables if len(table)]
    return pd.concat(parts, ignore_index=True) if parts else empty_screenshot_table()


def combine_trajectories(
    expert_table: pd.DataFrame,
    external_table: pd.DataFrame,
    expert_screenshots: pd.DataFrame,
    external_screenshots: pd.DataFrame,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Concatenate the sources into one validated trajectory table and log its counts.

    Returns:
        The expert table, the external table, the combined one and the screenshots of its
        steps (``hindsight.data.screenshots``), the four versioned outputs, saved together
        only once everything is checked.
    """
    parts = [table for table in (expert_table, external_table) if len(table)]
    combined = pd.concat(parts, ignore_index=True) if parts else empty_trajectory_table()
    clashing = set(expert_table["episode_id"]) & set(external_table["episode_id"])
    if clashing:
        raise ValueError(
            f"external trajectories reuse expert episode ids (field 'episode_id'): {sorted(clashing)[:5]}"
        )
    combined = validate_trajectories(combined, origin="trajectories")
    screenshots = validate_screenshots(
        _concat_screenshots([expert_screenshots, external_screenshots]), origin="screenshots", steps=combined
    )
    tracking.log_metrics({**ingestion_counts(combined), "ingestion/screenshots": float(len(screenshots))})
    return expert_table, external_table, combined, screenshots


def summarize_trajectories(trajectories: pd.DataFrame) -> pd.DataFrame:
    """One row per episode (length, return, success), derived from the step table."""
    return summarize_episodes(trajectories)

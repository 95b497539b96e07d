"""One entry of ``ingestion.external_files``: a path, or a mapping that names the file's format.

    external_files:
      - data/01_raw/demonstrations.jsonl            # format auto: hindsight.data.external
      - {path: data/01_raw/gui_episodes.jsonl, format: gui, images: data/01_raw/gui_screens}

``auto`` files hold the project's trajectory table or agent-SFT conversations
(``hindsight.data.external``: detected by extension and content); ``gui`` files hold GUI
episodes with a screenshot per step (``hindsight.data.gui_trajectories``). Every loader
returns the trajectory table and the screenshot table (empty for ``auto`` files).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hindsight.data.external import load_external_trajectories
from hindsight.data.gui_trajectories import load_gui_trajectories
from hindsight.data.schema import empty_screenshot_table
from hindsight.envs.reward import RewardConfig

FORMATS = ("auto", "gui")


@dataclass
class ExternalFile:
    """An external trajectory file and how to read it (an entry of ``ingestion.external_files``)."""

    path: str
    """The file, relative to the project root."""
    format: str = "auto"
    """auto: the project's trajectory table or agent-SFT conversations (JSONL / JSON /
    parquet, told apart by extension and content); gui: GUI episodes, one per JSON line,
    with a screenshot per step (docs/gui_data.md)."""
    images: str | None = None
    """gui: the folder the steps' screenshot paths are relative to (relative to the
    project root); null: the file's own folder."""

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path.strip():
            raise ValueError(f"ingestion.external_files: 'path' must name a file, got {self.path!r}")
        if self.format not in FORMATS:
            raise ValueError(f"ingestion.external_files: {self.path}: format must be one of {list(FORMATS)}, got {self.format!r}")
        if self.images is not None and self.format != "gui":
            raise ValueError(f"ingestion.external_files: {self.path}: 'images' is read for format gui only")


def as_external_file(entry: str | ExternalFile) -> ExternalFile:
    """An entry as an ``ExternalFile`` (a plain path is ``format: auto``)."""
    return entry if isinstance(entry, ExternalFile) else ExternalFile(path=str(entry))


def load_external_file(
    entry: str | ExternalFile, reward: RewardConfig | None = None, assume_success: bool = False, source: str = "expert"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read one external file: (trajectory table, screenshot table), both validated.

    Raises:
        TrajectoryValidationError: The file's first problem, naming file, line or row, and field.
    """
    entry = as_external_file(entry)
    if entry.format == "gui":
        return load_gui_trajectories(entry.path, entry.images, reward, assume_success, source)
    table = load_external_trajectories(Path(entry.path), reward=reward, assume_success=assume_success, source=source)
    return table, empty_screenshot_table()

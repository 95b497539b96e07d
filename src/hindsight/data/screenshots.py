"""Screenshots as data: one screen per step, in a table of their own keyed by (episode, step).

Environments that render a screen (``TextEnvironment.screenshot()`` is not None: the GUI
family) give one RGB image per state. The project keeps them in the catalog's versioned
``screenshots`` dataset, a table with the columns of ``SCREENSHOT_COLUMNS`` (``episode_id``,
``step``, ``pixels``, ``width``, ``height``): the trajectory table's row of the same
``episode_id`` and ``step`` is the step the screen belongs to (the screen the agent acted
on), so no table that passes steps along carries image bytes. A text environment's run has
an empty table.

``pixels`` holds the raw RGB bytes (row by row, ``height * width * 3``), and the catalog
writes the table with zstd: ``benchmarks/screenshot_storage.py`` measured, on 1,000 real
MiniWoB++ screens (210 x 160), about 1.7 KB a screen stored so in episode order (3.7 KB in
random order: zstd also finds what neighbouring screens share) against 6.3 KB as PNG files,
in a table or in a folder with an index, and the fastest read back to arrays (no image
decoding). Figures and the command: ``docs/gui_data.md``.

``validate_screenshots`` checks a table that came from outside, naming the origin, row and
field of the first problem, as ``schema.validate_trajectories`` does for the steps.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from hindsight.data.schema import (
    SCREENSHOT_COLUMNS,
    TrajectoryValidationError,
    coerce_columns,
    empty_screenshot_table,
    typed_table,
)


def _as_screen(image: Any) -> np.ndarray:
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3 or 0 in array.shape:
        raise ValueError(f"a screenshot is an RGB uint8 array of shape (height, width, 3), got {array.dtype} {array.shape}")
    return array


def screenshot_row(episode_id: str, step: int, image: np.ndarray) -> dict[str, Any]:
    """One row of the screenshot table: the screen of ``step`` of ``episode_id``.

    Raises:
        ValueError: ``image`` is not an RGB ``uint8`` array (height, width, 3).
    """
    array = _as_screen(image)
    height, width = array.shape[:2]
    return {
        "episode_id": str(episode_id), "step": int(step), "pixels": np.ascontiguousarray(array).tobytes(),
        "width": int(width), "height": int(height),
    }


def screen_of_row(pixels: bytes, width: int, height: int) -> np.ndarray:
    """A row's screen as an RGB ``uint8`` array (height, width, 3) (read-only: it shares the
    row's bytes)."""
    return np.frombuffer(pixels, dtype=np.uint8).reshape(int(height), int(width), 3)


def screenshot_table(rows: Sequence[dict[str, Any]] | Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Rows (``screenshot_row``) as a screenshot table, in the given order; empty with every
    column when there are none."""
    rows = list(rows)
    if not rows:
        return empty_screenshot_table()
    return typed_table(rows, SCREENSHOT_COLUMNS)


def validate_screenshots(
    df: pd.DataFrame, origin: str, row_labels: Sequence[str] | None = None, steps: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Check a screenshot table and return it with canonical columns and dtypes.

    Checks: every column of ``SCREENSHOT_COLUMNS`` present, no missing value, each of its
    kind; ``width`` and ``height`` positive and ``pixels`` of ``height * width * 3`` bytes;
    each (``episode_id``, ``step``) once; with ``steps`` (a trajectory table), each key one
    of its rows.

    Raises:
        TrajectoryValidationError: The first problem, naming ``origin``, the row and the field.
    """
    table = coerce_columns(df, SCREENSHOT_COLUMNS, origin, row_labels)

    def where(position: int) -> str:
        return f"{origin}, {row_labels[position] if row_labels is not None else f'row {position}'}"

    seen: dict[tuple[str, int], int] = {}
    for position, (episode, step, pixels, width, height) in enumerate(
        zip(table["episode_id"], table["step"], table["pixels"], table["width"], table["height"])
    ):
        for name, value in (("width", width), ("height", height)):
            if value <= 0:
                raise TrajectoryValidationError(f"{where(position)}, field {name!r}: {value} must be > 0.")
        if len(pixels) != width * height * 3:
            raise TrajectoryValidationError(
                f"{where(position)}, field 'pixels': {len(pixels):,} bytes, but a {width}x{height} RGB screen "
                f"has {width * height * 3:,}."
            )
        key = (episode, int(step))
        if key in seen:
            first = row_labels[seen[key]] if row_labels is not None else f"row {seen[key]}"
            raise TrajectoryValidationError(
                f"{where(position)}, field 'step': episode {episode!r} step {step} has a screenshot already ({first})."
            )
        seen[key] = position
    if steps is not None:
        known = set(zip(steps["episode_id"].tolist(), steps["step"].astype(int).tolist()))
        for key, position in seen.items():
            if key not in known:
                raise TrajectoryValidationError(
                    f"{where(position)}, field 'episode_id': no trajectory row for episode {key[0]!r} step {key[1]}."
                )
    return table


def screenshot_of(table: pd.DataFrame, episode_id: str, step: int) -> np.ndarray | None:
    """The screen of one step as an RGB array, None when the table has none for it."""
    match = table[(table["episode_id"] == episode_id) & (table["step"] == int(step))]
    if match.empty:
        return None
    row = match.iloc[0]
    return screen_of_row(row["pixels"], row["width"], row["height"])

"""The project's tables: their columns, types, and the check that runs wherever data enters.

This module is the one place that names table columns: the trajectory table (one row per step
sample, ``TRAJECTORY_COLUMNS``), the rollout table (the same plus the sampled tokens' log-probs,
``ROLLOUT_COLUMNS``), the per-episode outcomes and summary derived from it
(``EPISODE_OUTCOME_COLUMNS``, ``EPISODE_SUMMARY_COLUMNS``), the Skills table
(``SKILLS_TABLE_COLUMNS``) and the screenshots of environments that render a screen
(``SCREENSHOT_COLUMNS``: one screen per step, keyed by the trajectory table's ``episode_id``
and ``step``, so no other table carries image bytes; ``hindsight.data.screenshots``).
``validate_trajectories`` checks a table that came from outside (a file, another process)
and returns it with canonical column order and dtypes; the first problem
raises ``TrajectoryValidationError`` naming the origin, the row (or the file line, when the
caller passes ``row_labels``) and the field. Episode-level facts (success, length, return) are
derived by ``hindsight.data.outcomes``, never stored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from hindsight.data.coercion import COERCERS, describe, is_missing
from hindsight.envs.base import SPLITS

logger = logging.getLogger(__name__)

SOURCES = ("expert", "rollout", "patched", "world_model")


class TrajectoryValidationError(ValueError):
    """Data that does not follow the trajectory schema; the message names file, row, field."""


@dataclass(frozen=True)
class Column:
    """One column of a table: its kind and what it means."""

    kind: str
    """One of "str", "int", "float", "bool", "str_list", "float_list", "bytes"."""
    meaning: str


TRAJECTORY_COLUMNS: dict[str, Column] = {
    "episode_id": Column("str", "unique per episode"),
    "group_id": Column("str", 'the task instance, "env/game/split/seed"'),
    "env": Column("str", "environment family"),
    "task_type": Column("str", "game or task family (twc, cookingworld, boil, ...)"),
    "task": Column("str", "task text"),
    "split": Column("str", "train / dev / test"),
    "seed": Column("int", "task seed / variation inside the split"),
    "step": Column("int", "0-based step index within the episode"),
    "observation": Column("str", "observation the agent acted on at this step"),
    "anchor_observation": Column("str", "raw env observation of this state, without history"),
    "valid_actions": Column("str_list", "the valid actions at this step"),
    "action": Column("str", "the action played (parsed from response)"),
    "response": Column("str", "raw model output (== action for experts)"),
    "reward": Column("float", "step reward used for RL"),
    "score": Column("float", "the env's own progress score after this step"),
    "done": Column("bool", "episode ended after this step"),
    "won": Column("bool", "the task was solved by this step (True only on the winning step)"),
    "action_valid": Column("bool", "the env accepted the action"),
    "source": Column("str", "expert / rollout / patched / world_model / replay"),
    "policy_version": Column("int", "version of the acting policy (-1 for experts / external)"),
}

ROLLOUT_COLUMNS: dict[str, Column] = {
    **TRAJECTORY_COLUMNS,
    "response_logprobs": Column("float_list", "per-token log-probs of the response at sampling time"),
}
"""The table a rollout writes: the trajectory table plus what the sampler saw."""

EPISODE_OUTCOME_COLUMNS: dict[str, Column] = {
    "success": Column("bool", "any step won"),
    "length": Column("int", "number of steps"),
    "return": Column("float", "sum of step rewards"),
    "invalid_actions": Column("int", "steps whose action the env did not accept"),
}
"""What an episode achieved, derived from its steps (``hindsight.data.outcomes``)."""

EPISODE_SUMMARY_COLUMNS: dict[str, Column] = {
    "episode_id": Column("str", "unique per episode"),
    "group_id": Column("str", "the task instance"),
    "env": Column("str", "environment family"),
    "task_type": Column("str", "game or task family"),
    "split": Column("str", "train / dev / test"),
    "source": Column("str", "expert / rollout / patched / world_model / replay"),
    "length": EPISODE_OUTCOME_COLUMNS["length"],
    "return": EPISODE_OUTCOME_COLUMNS["return"],
    "success": EPISODE_OUTCOME_COLUMNS["success"],
    "invalid_actions": EPISODE_OUTCOME_COLUMNS["invalid_actions"],
}

SKILLS_TABLE_COLUMNS: dict[str, Column] = {
    "episode_id": Column("str", "the episode the skill was written about"),
    "group_id": Column("str", "its task instance"),
    "success": Column("bool", "the episode solved its task"),
    "summary": Column("str", "the teacher's one-sentence account ('' when nothing parsed)"),
    "skill": Column("str", "the hindsight skill ('' when nothing parsed)"),
    "teacher": Column("str", "name of the teacher that wrote it"),
    "accepted": Column("bool", "kept by validation (parsed, when there was none)"),
    "delta_success": Column("float", "skill minus plain success rate (NaN when not validated)"),
    "parse_ok": Column("bool", "the teacher's output held a skill"),
}
"""One row per teacher record (``hindsight.skills.records.skills_table``)."""

SCREENSHOT_COLUMNS: dict[str, Column] = {
    "episode_id": Column("str", "the episode (its rows in the trajectory table)"),
    "step": Column("int", "the step whose screen the agent acted on (the trajectory row's step)"),
    "pixels": Column("bytes", "the screen's RGB pixels, row by row (height x width x 3 bytes)"),
    "width": Column("int", "the screen's width in pixels"),
    "height": Column("int", "the screen's height in pixels"),
}
"""One row per step of an environment that renders a screen (``hindsight.data.screenshots``)."""

EPISODE_CONSTANT_FIELDS = ("group_id", "env", "task_type", "task", "split", "seed", "source")
"""Fields every row of one episode must share."""

_DTYPES = {
    "str": "str", "int": "int64", "float": "float64", "bool": "bool", "str_list": "object", "float_list": "object",
    "bytes": "object",
}
_SCALAR_KINDS = ("int", "float", "bool")


def make_group_id(env: str, game: str, split: str, seed: int) -> str:
    """The group id of a task instance: ``"env/game/split/seed"``."""
    return f"{env}/{game}/{split}/{int(seed)}"


def _empty_table(columns: dict[str, Column]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series([], dtype=_DTYPES[column.kind]) for name, column in columns.items()})


def typed_table(rows: Sequence[dict[str, Any]] | pd.DataFrame, columns: dict[str, Column]) -> pd.DataFrame:
    """``rows`` (dicts, or a table) as a table with exactly ``columns``, in order, the
    numeric and true/false columns cast to their dtype (text and list columns left as built)."""
    table = rows[list(columns)] if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows), columns=list(columns))
    scalar_dtypes = {name: _DTYPES[column.kind] for name, column in columns.items() if column.kind in _SCALAR_KINDS}
    return table.astype(scalar_dtypes)


def empty_trajectory_table() -> pd.DataFrame:
    """A trajectory table with every column, its dtype, and no rows."""
    return _empty_table(TRAJECTORY_COLUMNS)


def empty_episode_summary() -> pd.DataFrame:
    """An episode summary table with every column, its dtype, and no rows."""
    return _empty_table(EPISODE_SUMMARY_COLUMNS)


def empty_screenshot_table() -> pd.DataFrame:
    """A screenshot table with every column, its dtype, and no rows (a text environment's)."""
    return _empty_table(SCREENSHOT_COLUMNS)


def _label(row_labels: Sequence[str] | None, position: int) -> str:
    return row_labels[position] if row_labels is not None else f"row {position}"


def _where(origin: str, row_labels: Sequence[str] | None, position: int) -> str:
    return f"{origin}, {_label(row_labels, position)}"


def coerce_columns(
    df: pd.DataFrame, columns: dict[str, Column], origin: str, row_labels: Sequence[str] | None = None
) -> pd.DataFrame:
    """Check that ``df`` has ``columns`` with values of the right kind; return a copy with
    exactly those columns, in order, with canonical dtypes.

    Args:
        df: The table to check.
        columns: The schema (e.g. ``TRAJECTORY_COLUMNS``).
        origin: Where the table came from (a file path), for messages.
        row_labels: How to name each row in messages (e.g. "line 7"); default "row i"
            (0-based position).

    Raises:
        TrajectoryValidationError: A column is missing, or a value is missing or of the wrong type.
    """
    if not isinstance(df, pd.DataFrame):
        raise TrajectoryValidationError(f"{origin}: expected a table (DataFrame), got {type(df).__name__}.")
    missing = [name for name in columns if name not in df.columns]
    if missing:
        raise TrajectoryValidationError(
            f"{origin}: missing field(s) {', '.join(repr(name) for name in missing)} "
            f"(the table needs: {', '.join(columns)})."
        )
    extra = [str(name) for name in df.columns if name not in columns]
    if extra:
        logger.info("%s: ignoring column(s) outside the schema: %s", origin, ", ".join(extra))
    coerced: dict[str, Any] = {}
    for name, column in columns.items():
        convert = COERCERS[column.kind]
        values = df[name].tolist()
        converted = []
        for position, value in enumerate(values):
            if is_missing(value):
                what = "NaN or missing value" if column.kind == "float" else "missing value"
                raise TrajectoryValidationError(
                    f"{_where(origin, row_labels, position)}, field {name!r}: {what} (expected {column.kind})."
                )
            try:
                converted.append(convert(value))
            except TypeError as error:
                raise TrajectoryValidationError(
                    f"{_where(origin, row_labels, position)}, field {name!r}: {error}, got {describe(value)}."
                ) from None
        series = pd.Series(converted, dtype=_DTYPES[column.kind], index=range(len(converted)))
        coerced[name] = series
    return pd.DataFrame(coerced, index=range(len(df)))


def _check_values(table: pd.DataFrame, origin: str, row_labels: Sequence[str] | None) -> None:
    rules: list[tuple[str, Callable[[Any], bool], str]] = [
        ("split", lambda value: value in SPLITS, f"must be one of {list(SPLITS)}"),
        ("source", lambda value: value in SOURCES, f"must be one of {list(SOURCES)}"),
        ("step", lambda value: value >= 0, "must be >= 0"),
        ("policy_version", lambda value: value >= -1, "must be >= -1"),
        ("episode_id", lambda value: value.strip() != "", "must not be empty"),
        ("group_id", lambda value: value.strip() != "", "must not be empty"),
        ("env", lambda value: value.strip() != "", "must not be empty"),
    ]
    for name, is_ok, rule in rules:
        for position, value in enumerate(table[name].tolist()):
            if not is_ok(value):
                raise TrajectoryValidationError(
                    f"{_where(origin, row_labels, position)}, field {name!r}: {value!r} {rule}."
                )


def _check_episodes(table: pd.DataFrame, origin: str, row_labels: Sequence[str] | None) -> None:
    first_row: dict[str, int] = {}
    seen_steps: dict[str, set[int]] = {}
    done_at: dict[str, tuple[int, int]] = {}  # episode -> (first done step, its row)
    constants = {name: table[name].tolist() for name in EPISODE_CONSTANT_FIELDS}
    done = table["done"].tolist()
    for position, (episode, step) in enumerate(zip(table["episode_id"].tolist(), table["step"].tolist())):
        if episode not in first_row:
            first_row[episode], seen_steps[episode] = position, set()
        reference = first_row[episode]
        for name in EPISODE_CONSTANT_FIELDS:
            here, there = constants[name][position], constants[name][reference]
            if here != there:
                raise TrajectoryValidationError(
                    f"{_where(origin, row_labels, position)}, field {name!r}: episode {episode!r} has "
                    f"{here!r} here but {there!r} at {_label(row_labels, reference)}; it must be the "
                    "same on every step of an episode."
                )
        if step in seen_steps[episode]:
            raise TrajectoryValidationError(
                f"{_where(origin, row_labels, position)}, field 'step': episode {episode!r} has step {step} twice."
            )
        seen_steps[episode].add(step)
        if done[position] and (episode not in done_at or step < done_at[episode][0]):
            done_at[episode] = (step, position)
    for episode, steps in seen_steps.items():
        if steps != set(range(len(steps))):
            missing = sorted(set(range(max(steps) + 1)) - steps)[:5]
            raise TrajectoryValidationError(
                f"{_where(origin, row_labels, first_row[episode])}, field 'step': episode {episode!r} "
                f"skips step(s) {missing} (steps must run 0, 1, 2, ... without gaps)."
            )
        if episode in done_at and done_at[episode][0] < len(steps) - 1:
            step, position = done_at[episode]
            raise TrajectoryValidationError(
                f"{_where(origin, row_labels, position)}, field 'done': episode {episode!r} ended at step "
                f"{step} but goes on to step {len(steps) - 1} (only its last step may be done)."
            )


def validate_trajectories(
    df: pd.DataFrame, origin: str, row_labels: Sequence[str] | None = None
) -> pd.DataFrame:
    """Check a trajectory table and return it with canonical columns and dtypes.

    Checks: every column present; no missing values; each value of its column's kind
    (integral floats pass as int; lists, tuples and arrays of strings as ``valid_actions``);
    ``split``, ``source`` from their sets; ``step >= 0``, ``policy_version >= -1``; ids
    not empty; per episode, the fields of ``EPISODE_CONSTANT_FIELDS`` constant, steps
    0..n-1 each once (in any row order) and no step after one that is ``done``. Numbers
    must be finite (NaN reads as missing). Columns outside the schema are dropped.

    Args:
        df: The table.
        origin: Where it came from (a file path or a name), used in messages.
        row_labels: Message label of each row (e.g. "line 12"); default "row i", 0-based.

    Returns:
        A new DataFrame: the schema's columns in order, canonical dtypes, index 0..n-1.

    Raises:
        TrajectoryValidationError: The first problem found, naming origin, row and field.
    """
    table = coerce_columns(df, TRAJECTORY_COLUMNS, origin, row_labels)
    _check_values(table, origin, row_labels)
    _check_episodes(table, origin, row_labels)
    return table


def validate_episode_summary(df: pd.DataFrame, origin: str) -> pd.DataFrame:
    """Check an episode summary table (``EPISODE_SUMMARY_COLUMNS``); return it canonical."""
    table = coerce_columns(df, EPISODE_SUMMARY_COLUMNS, origin)
    if table["episode_id"].duplicated().any():
        position = int(np.flatnonzero(table["episode_id"].duplicated().to_numpy())[0])
        raise TrajectoryValidationError(
            f"{origin}, row {position}, field 'episode_id': {table['episode_id'][position]!r} appears twice."
        )
    return table

"""Load trajectories from files made elsewhere: the project's own table, or the
conversation format of public agent-SFT sets.

Formats (detected by extension, then by content):

- ``.parquet`` / ``.pq``: the project's trajectory table, or a table with a
  ``conversations`` / ``messages`` column (one episode per row, as on the HF hub).
- ``.jsonl`` / ``.ndjson``: one JSON value per line; ``.json``: one JSON list (or an object
  holding it under "data", "episodes", "trajectories" or "rows"). A ``.json`` file that is
  really JSON lines, or a ``.jsonl`` file holding one JSON list, is read as what it is.
  Each record is either a table row (it has ``episode_id`` and ``step``: every column of
  the schema is then required) or an episode in conversation form.

Conversation episodes are a list of turns, or an object with a ``conversations`` or
``messages`` list and optional fields ``id``, ``task``, ``task_type`` (or ``category``),
``split``, and the outcome ``success`` / ``won`` (true/false) or ``reward`` (a number; the
episode counts as solved when it is >= 1.0, the full-score convention of ALFWorld / WebShop
style sets). A turn is ``{"from": "human"|"gpt"|"system", "value": text}`` or ``{"role":
"user"|"assistant"|"system", "content": text}``. Reading one:

- The task type is the ``task_type`` / ``category`` field, else the ``id`` without its
  trailing number ("alfworld_12" -> "alfworld"), else "external".
- Steps are the assistant turns from the first one that has an ``Action: ...`` line on;
  assistant turns before it (an "OK" acknowledging the instructions) are preamble. Every
  later assistant turn must carry an ``Action:`` line. The action is parsed with
  ``hindsight.policy.prompts.parse_action``; the response is the whole assistant text.
- The observation of a step is the last user turn before it.
- The task is the ``task`` field, else the first line saying "Your task is to ..." in the
  user turns before the first step (AgentInstruct-style sets put the instructions first
  and the task later), else the first user turn.
- Valid actions are unknown (empty lists); every action counts as valid; the winning step,
  if the outcome says solved, is the last one. Without an outcome field the episode counts
  as ``assume_success``. Rows get ``env="external"``, ``policy_version=-1`` and
  ``source="expert"`` (or the ``source`` argument).

Every problem raises ``TrajectoryValidationError`` naming the file, the line (JSON lines),
item (JSON list) or row (parquet), the turn where relevant, and the field. Nothing is
written: the functions return DataFrames.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from hindsight.data.schema import SOURCES, TRAJECTORY_COLUMNS, TrajectoryValidationError, validate_trajectories
from hindsight.envs.base import SPLITS
from hindsight.envs.reward import RewardConfig, step_reward
from hindsight.policy.prompts import parse_action

logger = logging.getLogger(__name__)

EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet", ".pq": "parquet"}
LIST_KEYS = ("data", "episodes", "trajectories", "rows")
TURN_LIST_KEYS = ("conversations", "messages")
_TURN_KEYS_TEXT = " or ".join(repr(key) for key in TURN_LIST_KEYS)
USER_ROLES = {"human": "user", "user": "user"}
ASSISTANT_ROLES = {"gpt": "assistant", "assistant": "assistant", "model": "assistant", "bot": "assistant"}
SYSTEM_ROLES = {"system": "system"}
EXTERNAL_ENV = "external"
SUCCESS_REWARD_THRESHOLD = 1.0
_ACTION_LINE = re.compile(r"(?im)^\s*action\s*:\s*\S")
_TASK_LINE = re.compile(r"(?i)your task is to\b.*")
_ID_SUFFIX = re.compile(r"[_-]?\d+$")
_PARQUET_MAGIC = b"PAR1"


def load_external_trajectories(
    path: str | Path,
    reward: RewardConfig | None = None,
    assume_success: bool = False,
    source: str = "expert",
) -> pd.DataFrame:
    """Read a trajectory file (see the module docstring for the formats).

    Args:
        path: The file.
        reward: Step reward settings for conversation episodes (table rows keep theirs).
        assume_success: Outcome of conversation episodes that state none.
        source: The ``source`` given to conversation episodes (one of ``SOURCES``).

    Returns:
        A validated trajectory table.

    Raises:
        TrajectoryValidationError: Unknown format, unreadable or empty file, bad JSON, a
            missing field, a value of the wrong type, ... (file, line/row and field named).
    """
    path = Path(path)
    origin = str(path)
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if not path.is_file():
        raise TrajectoryValidationError(f"{origin}: no such file.")
    kind = EXTENSIONS.get(path.suffix.lower())
    if kind is None:
        raise TrajectoryValidationError(
            f"{origin}: unknown format (extension {path.suffix or '(none)'!r}); supported: "
            f"{', '.join(EXTENSIONS)}."
        )
    data = path.read_bytes()
    if not data.strip():
        raise TrajectoryValidationError(f"{origin}: the file is empty.")
    if kind == "parquet":
        return _load_parquet(path, data, reward, assume_success, source)
    text = _decode_utf8(data, origin)
    records, labels = _parse_json_records(text, origin, kind)
    return records_to_table(records, labels, origin, reward, assume_success, source)


def _decode_utf8(data: bytes, origin: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise TrajectoryValidationError(
            f"{origin}, line {line}: not valid UTF-8 (byte 0x{data[error.start]:02x} at offset "
            f"{error.start}); save the file as UTF-8."
        ) from None


def _parse_json_lines(text: str, origin: str) -> tuple[list[Any], list[str]]:
    records, labels = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise TrajectoryValidationError(
                f"{origin}, line {number}: invalid JSON ({error.msg} at column {error.colno})."
            ) from None
        labels.append(f"line {number}")
    return records, labels


def _parse_json_document(document: Any, origin: str) -> tuple[list[Any], list[str]]:
    if isinstance(document, dict):
        key = next((key for key in LIST_KEYS if isinstance(document.get(key), list)), None)
        if key is not None:
            document = document[key]
        elif any(isinstance(document.get(key), list) for key in TURN_LIST_KEYS):
            document = [document]
    if not isinstance(document, list):
        raise TrajectoryValidationError(
            f"{origin}: expected a JSON list of rows or episodes at the top level (or an object "
            f"with one under {', '.join(repr(k) for k in LIST_KEYS)}), got {type(document).__name__}."
        )
    return document, [f"item {index}" for index in range(len(document))]


def _parse_json_records(text: str, origin: str, kind: str) -> tuple[list[Any], list[str]]:
    """Records of a ``.json`` (one document) or ``.jsonl`` (one value per line) file; each
    falls back to the other reading when its own fails and the other succeeds."""
    if kind == "json":
        try:
            return _parse_json_document(json.loads(text), origin)
        except json.JSONDecodeError as error:
            if error.msg != "Extra data":
                raise TrajectoryValidationError(
                    f"{origin}, line {error.lineno}: invalid JSON ({error.msg} at column {error.colno})."
                ) from None
        logger.info("%s: holds several JSON values; reading it as JSON lines", origin)
        return _parse_json_lines(text, origin)
    try:
        return _parse_json_lines(text, origin)
    except TrajectoryValidationError as line_error:
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            raise line_error from None
        logger.info("%s: one JSON document over several lines; reading it as JSON", origin)
        return _parse_json_document(document, origin)


def _is_table_row(record: Any) -> bool:
    return isinstance(record, dict) and "episode_id" in record and "step" in record


def _is_episode(record: Any) -> bool:
    if isinstance(record, list):
        return True
    return isinstance(record, dict) and any(key in record for key in TURN_LIST_KEYS)


def records_to_table(
    records: Sequence[Any],
    labels: Sequence[str],
    origin: str,
    reward: RewardConfig | None = None,
    assume_success: bool = False,
    source: str = "expert",
) -> pd.DataFrame:
    """Turn parsed records (all table rows, or all episodes) into a validated table.

    Args:
        records: Parsed JSON values, one per line / item / row.
        labels: Where each record came from ("line 3"), for messages.
        origin: The file, for messages.
        reward: Step reward settings for conversation episodes.
        assume_success: Outcome of conversation episodes that state none.
        source: The ``source`` of conversation episodes.
    """
    if not records:
        raise TrajectoryValidationError(f"{origin}: the file holds no records.")
    if _is_table_row(records[0]):
        return _rows_to_table(records, labels, origin)
    if not _is_episode(records[0]):
        raise TrajectoryValidationError(
            f"{origin}, {labels[0]}: neither a trajectory row (fields 'episode_id' and 'step') nor "
            f"a conversation (a list of turns, or an object with a {_TURN_KEYS_TEXT} list)."
        )
    return _episodes_to_table(records, labels, origin, reward or RewardConfig(), assume_success, source)


def _rows_to_table(records: Sequence[Any], labels: Sequence[str], origin: str) -> pd.DataFrame:
    for record, label in zip(records, labels):
        if not isinstance(record, dict):
            raise TrajectoryValidationError(
                f"{origin}, {label}: expected a JSON object (a trajectory row like {labels[0]}), "
                f"got {type(record).__name__}."
            )
        missing = [name for name in TRAJECTORY_COLUMNS if name not in record]
        if missing:
            raise TrajectoryValidationError(
                f"{origin}, {label}: missing field(s) {', '.join(repr(name) for name in missing)}."
            )
    return validate_trajectories(pd.DataFrame(list(records)), origin, row_labels=list(labels))


def _turns_of(record: Any, where: str) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(record, dict):
        key = next((key for key in TURN_LIST_KEYS if key in record), None)
        turns = record[key]
        if not isinstance(turns, (list, tuple, np.ndarray)):
            raise TrajectoryValidationError(
                f"{where}, field {key!r}: expected a list of turns, got {type(turns).__name__}."
            )
        return list(turns), record
    if isinstance(record, (list, tuple, np.ndarray)):
        return list(record), {}
    raise TrajectoryValidationError(
        f"{where}: expected a conversation (a list of turns or an object with "
        f"{_TURN_KEYS_TEXT}), got {type(record).__name__}."
    )


def _normalize_turn(turn: Any, where: str) -> tuple[str, str]:
    if not isinstance(turn, dict):
        raise TrajectoryValidationError(f"{where}: expected a turn object, got {type(turn).__name__}.")
    role_field = "from" if "from" in turn else "role"
    text_field = "value" if "value" in turn else "content"
    if role_field not in turn:
        raise TrajectoryValidationError(f"{where}: missing field 'from' (or 'role').")
    if text_field not in turn:
        raise TrajectoryValidationError(f"{where}: missing field 'value' (or 'content').")
    role, text = turn[role_field], turn[text_field]
    if not isinstance(role, str):
        raise TrajectoryValidationError(f"{where}, field {role_field!r}: expected a string, got {type(role).__name__}.")
    if not isinstance(text, str):
        raise TrajectoryValidationError(f"{where}, field {text_field!r}: expected a string, got {type(text).__name__}.")
    roles = {**USER_ROLES, **ASSISTANT_ROLES, **SYSTEM_ROLES}
    if role.lower() not in roles:
        raise TrajectoryValidationError(
            f"{where}, field {role_field!r}: unknown role {role!r} (expected one of {', '.join(roles)})."
        )
    return roles[role.lower()], text


def _is_absent(meta: dict[str, Any], name: str) -> bool:
    value = meta.get(name)
    return value is None or (isinstance(value, float) and np.isnan(value))


def _outcome(meta: dict[str, Any], where: str, assume_success: bool) -> bool:
    for name in ("success", "won"):
        if not _is_absent(meta, name):
            value = meta[name]
            if not isinstance(value, (bool, np.bool_)):
                raise TrajectoryValidationError(
                    f"{where}, field {name!r}: expected true/false, got {type(value).__name__} {value!r}."
                )
            return bool(value)
    if not _is_absent(meta, "reward"):
        value = meta["reward"]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise TrajectoryValidationError(
                f"{where}, field 'reward': expected a number, got {type(value).__name__} {value!r}."
            )
        return float(value) >= SUCCESS_REWARD_THRESHOLD
    return assume_success


def _optional_text(meta: dict[str, Any], name: str, where: str, allow_int: bool = False) -> str | None:
    """``meta[name]`` as text, None when absent; a value of another type is an error."""
    if _is_absent(meta, name):
        return None
    value = meta[name]
    if isinstance(value, str) or (allow_int and isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
        return str(value)
    expected = "a string or an integer" if allow_int else "a string"
    raise TrajectoryValidationError(
        f"{where}, field {name!r}: expected {expected}, got {type(value).__name__} {value!r}."
    )


def _task_text(meta_task: str | None, user_texts: list[str]) -> str:
    if meta_task:
        return meta_task.strip()
    for text in user_texts:
        match = _TASK_LINE.search(text)
        if match:
            return match.group(0).strip()
    return " ".join(user_texts[0].split()) if user_texts else ""


def _episode_rows(
    record: Any,
    index: int,
    label: str,
    origin: str,
    stem: str,
    reward: RewardConfig,
    assume_success: bool,
    source: str,
) -> list[dict[str, Any]]:
    where = f"{origin}, {label}"
    turns, meta = _turns_of(record, where)
    normalized = [_normalize_turn(turn, f"{where}, turn {number}") for number, turn in enumerate(turns)]
    first_action = next(
        (number for number, (role, text) in enumerate(normalized) if role == "assistant" and _ACTION_LINE.search(text)),
        None,
    )
    if first_action is None:
        raise TrajectoryValidationError(
            f"{where}, field 'conversations': no assistant turn has an 'Action: ...' line, so the "
            "episode has no actions."
        )
    split = _optional_text(meta, "split", where) or "train"
    if split not in SPLITS:
        raise TrajectoryValidationError(f"{where}, field 'split': {split!r} must be one of {list(SPLITS)}.")
    explicit_id = _optional_text(meta, "id", where, allow_int=True)
    episode_key = explicit_id or str(index)
    task_type = (
        _optional_text(meta, "task_type", where)
        or _optional_text(meta, "category", where)
        or (_ID_SUFFIX.sub("", explicit_id) if explicit_id else "")
        or EXTERNAL_ENV
    )
    preamble_user_texts = [text for role, text in normalized[:first_action] if role == "user"]
    task = _task_text(_optional_text(meta, "task", where), preamble_user_texts)
    success = _outcome(meta, where, assume_success)
    group_id = f"{EXTERNAL_ENV}/{task_type}/{split}/{stem}:{episode_key}"
    rows: list[dict[str, Any]] = []
    last_user_text = preamble_user_texts[-1] if preamble_user_texts else ""
    for number in range(first_action, len(normalized)):
        role, text = normalized[number]
        if role == "user":
            last_user_text = text
            continue
        if role != "assistant":
            continue
        if not _ACTION_LINE.search(text):
            raise TrajectoryValidationError(
                f"{where}, turn {number}, field 'value': assistant turn without an 'Action: ...' line."
            )
        rows.append(
            {
                "episode_id": f"{EXTERNAL_ENV}/{stem}/{episode_key}",
                "group_id": group_id,
                "env": EXTERNAL_ENV,
                "task_type": task_type,
                "task": task,
                "split": split,
                "seed": index,
                "step": len(rows),
                "observation": last_user_text.strip(),
                "anchor_observation": last_user_text.strip(),
                "valid_actions": [],
                "action": parse_action(text),
                "response": text,
                "source": source,
                "policy_version": -1,
                "_label": f"{label}, turn {number}",
            }
        )
    for position, row in enumerate(rows):
        last = position == len(rows) - 1
        won_now = success and last
        row.update(
            reward=step_reward(won_now, True, reward),
            score=1.0 if won_now else 0.0,
            done=last,
            won=won_now,
            action_valid=True,
        )
    return rows


def _episodes_to_table(
    records: Sequence[Any],
    labels: Sequence[str],
    origin: str,
    reward: RewardConfig,
    assume_success: bool,
    source: str,
) -> pd.DataFrame:
    stem = Path(origin).stem
    rows: list[dict[str, Any]] = []
    first_label_of: dict[str, str] = {}
    for index, (record, label) in enumerate(zip(records, labels)):
        if _is_table_row(record):
            raise TrajectoryValidationError(
                f"{origin}, {label}: a trajectory row in a file of conversations (like {labels[0]})."
            )
        episode_rows = _episode_rows(record, index, label, origin, stem, reward, assume_success, source)
        episode_id = episode_rows[0]["episode_id"]
        if episode_id in first_label_of:
            raise TrajectoryValidationError(
                f"{origin}, {label}, field 'id': episode id {episode_id.rsplit('/', 1)[-1]!r} already "
                f"used at {first_label_of[episode_id]}."
            )
        first_label_of[episode_id] = label
        rows.extend(episode_rows)
    row_labels = [row.pop("_label") for row in rows]
    table = pd.DataFrame(rows, columns=list(TRAJECTORY_COLUMNS))
    return validate_trajectories(table, origin, row_labels=row_labels)


def _load_parquet(
    path: Path, data: bytes, reward: RewardConfig | None, assume_success: bool, source: str
) -> pd.DataFrame:
    origin = str(path)
    if not (data.startswith(_PARQUET_MAGIC) and data.endswith(_PARQUET_MAGIC)):
        raise TrajectoryValidationError(
            f"{origin}: not a parquet file (it does not start and end with the 'PAR1' marker)."
        )
    try:
        frame = pd.read_parquet(path)
    except Exception as error:  # pyarrow raises several types for corrupt files
        raise TrajectoryValidationError(
            f"{origin}: unreadable parquet file ({type(error).__name__}: {error})."
        ) from None
    if frame.empty:
        raise TrajectoryValidationError(f"{origin}: the table has no rows.")
    if "episode_id" not in frame.columns and any(key in frame.columns for key in TURN_LIST_KEYS):
        records = frame.to_dict("records")
        labels = [f"row {i}" for i in range(len(records))]
        return records_to_table(records, labels, origin, reward, assume_success, source)
    return validate_trajectories(frame, origin)

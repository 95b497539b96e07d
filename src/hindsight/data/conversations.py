"""Episodes in the conversation form of public agent-SFT sets, read into trajectory rows.

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
  and the task later), else the user's instruction: the first user turn after the last
  assistant turn before the first step (the turns up to an "OK" that acknowledges them
  are a preamble: instructions, format, examples), else the last user turn before the
  first step. System turns are never the task.
- Valid actions are unknown (empty lists); every action counts as valid; the winning step,
  if the outcome says solved, is the last one. Without an outcome field the episode counts
  as ``assume_success``. Rows get ``env="external"``, ``policy_version=-1`` and
  ``source="expert"`` (or the ``source`` argument).

Every problem raises ``TrajectoryValidationError`` naming the file, the record, the turn
where relevant, and the field. ``hindsight.data.external`` finds the records in a file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from hindsight.data.rows import EpisodeFields, trajectory_row
from hindsight.data.schema import TRAJECTORY_COLUMNS, TrajectoryValidationError, validate_trajectories
from hindsight.envs.base import SPLITS
from hindsight.envs.reward import RewardConfig, step_reward
from hindsight.policy.prompts import parse_action

TURN_LIST_KEYS = ("conversations", "messages")
TURN_KEYS_TEXT = " or ".join(repr(key) for key in TURN_LIST_KEYS)
USER_ROLES = {"human": "user", "user": "user"}
ASSISTANT_ROLES = {"gpt": "assistant", "assistant": "assistant", "model": "assistant", "bot": "assistant"}
SYSTEM_ROLES = {"system": "system"}
EXTERNAL_ENV = "external"
SUCCESS_REWARD_THRESHOLD = 1.0
_ACTION_LINE = re.compile(r"(?im)^\s*action\s*:\s*\S")
_TASK_LINE = re.compile(r"(?i)your task is to\b.*")
_ID_SUFFIX = re.compile(r"[_-]?\d+$")


def is_table_row(record: Any) -> bool:
    """Whether a parsed record is a trajectory-table row (it has ``episode_id`` and ``step``)."""
    return isinstance(record, dict) and "episode_id" in record and "step" in record


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
        f"{TURN_KEYS_TEXT}), got {type(record).__name__}."
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
        if not np.isfinite(float(value)):
            raise TrajectoryValidationError(f"{where}, field 'reward': expected a finite number, got {value!r}.")
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


def _task_text(meta_task: str | None, turns_before_first_step: list[tuple[str, str]]) -> str:
    """The task (module docstring): the ``task`` field, a "Your task is to" line, else the
    user's instruction after an acknowledged preamble, else the last user turn."""
    if meta_task:
        return meta_task.strip()
    user_texts = [text for role, text in turns_before_first_step if role == "user"]
    for text in user_texts:
        match = _TASK_LINE.search(text)
        if match:
            return match.group(0).strip()
    acknowledged = max((i for i, (role, _) in enumerate(turns_before_first_step) if role == "assistant"), default=-1)
    after_preamble = [text for role, text in turns_before_first_step[acknowledged + 1 :] if role == "user"] if acknowledged >= 0 else []
    instruction = after_preamble[0] if after_preamble else (user_texts[-1] if user_texts else "")
    return " ".join(instruction.split())


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
    """The trajectory rows of one conversation record (module docstring), each with a
    ``_label`` naming its record and turn for later messages."""
    where = f"{origin}, {label}"
    turns, meta = _turns_of(record, where)
    normalized = [_normalize_turn(turn, f"{where}, turn {number}") for number, turn in enumerate(turns)]
    first_action = _first_action_turn(normalized, meta, where)
    episode = _episode_fields(meta, where, index, stem, source, normalized, first_action)
    success = _outcome(meta, where, assume_success)
    turns_played = _played_turns(normalized, first_action, where)
    return _step_rows(episode, turns_played, success, label, reward)


def _first_action_turn(normalized: list[tuple[str, str]], meta: dict[str, Any], where: str) -> int:
    """The number of the first assistant turn with an ``Action: ...`` line (the first step);
    an episode without one has no steps, which is an error."""
    first_action = next(
        (number for number, (role, text) in enumerate(normalized) if role == "assistant" and _ACTION_LINE.search(text)),
        None,
    )
    if first_action is None:
        field = next((key for key in TURN_LIST_KEYS if key in meta), "conversations")
        if not any(role == "assistant" for role, _ in normalized):
            raise TrajectoryValidationError(
                f"{where}, field {field!r}: no assistant turn among its {len(normalized)} turn(s), so the "
                "episode has no steps."
            )
        raise TrajectoryValidationError(
            f"{where}, field {field!r}: no assistant turn has an 'Action: ...' line, so the "
            "episode has no actions."
        )
    return first_action


def _episode_fields(
    meta: dict[str, Any],
    where: str,
    index: int,
    stem: str,
    source: str,
    normalized: list[tuple[str, str]],
    first_action: int,
) -> EpisodeFields:
    """The fields every row of the episode shares: split, ids, task type and task, read from
    the record's optional fields (module docstring) and the turns before the first step."""
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
    task = _task_text(_optional_text(meta, "task", where), normalized[:first_action])
    return EpisodeFields(
        episode_id=f"{EXTERNAL_ENV}/{stem}/{episode_key}",
        group_id=f"{EXTERNAL_ENV}/{task_type}/{split}/{stem}:{episode_key}",
        env=EXTERNAL_ENV,
        task_type=task_type,
        task=task,
        split=split,
        seed=index,
        source=source,
        policy_version=-1,
    )


def _played_turns(normalized: list[tuple[str, str]], first_action: int, where: str) -> list[tuple[int, str, str]]:
    """The steps from the first one on, as (turn number, assistant text, observation: the last
    user turn before it); every assistant turn from the first step on must have an
    ``Action: ...`` line."""
    preamble_user_texts = [text for role, text in normalized[:first_action] if role == "user"]
    turns_played: list[tuple[int, str, str]] = []  # (turn number, assistant text, observation)
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
        turns_played.append((number, text, last_user_text.strip()))
    return turns_played


def _step_rows(
    episode: EpisodeFields, turns_played: list[tuple[int, str, str]], success: bool, label: str, reward: RewardConfig
) -> list[dict[str, Any]]:
    """One trajectory row per played turn (valid actions unknown, every action valid; the last
    step wins when the episode succeeded), each with its ``_label``."""
    rows: list[dict[str, Any]] = []
    for position, (number, text, observation) in enumerate(turns_played):
        last = position == len(turns_played) - 1
        won_now = success and last
        row = trajectory_row(
            episode,
            step=position,
            observation=observation,
            anchor_observation=observation,
            valid_actions=[],
            action=parse_action(text),
            response=text,
            reward=step_reward(won_now, True, reward),
            score=1.0 if won_now else 0.0,
            done=last,
            won=won_now,
            action_valid=True,
        )
        rows.append({**row, "_label": f"{label}, turn {number}"})
    return rows


def conversations_to_table(
    records: Sequence[Any],
    labels: Sequence[str],
    origin: str,
    reward: RewardConfig,
    assume_success: bool,
    source: str,
) -> pd.DataFrame:
    """Conversation episodes (one per record) as a validated trajectory table.

    Args:
        records: Parsed records, one episode each.
        labels: Where each came from ("line 3"), for messages.
        origin: The file, for messages; its stem makes the episode and group ids.
        reward: Step reward settings.
        assume_success: Outcome of episodes that state none.
        source: The ``source`` of the rows.
    """
    stem = Path(origin).stem
    rows: list[dict[str, Any]] = []
    first_label_of: dict[str, str] = {}
    for index, (record, label) in enumerate(zip(records, labels)):
        if is_table_row(record):
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
    table = validate_trajectories(table, origin, row_labels=row_labels)
    table.attrs[OUTCOME_ASSUMED] = sum(not states_outcome(_turns_of(record, origin)[1]) for record in records)
    return table


OUTCOME_ASSUMED = "outcome_assumed_episodes"
"""``DataFrame.attrs`` key: how many episodes of a loaded file stated no outcome, so that
``assume_success`` decided it."""


def states_outcome(meta: dict[str, Any]) -> bool:
    """Whether an episode's fields state its outcome (``success``, ``won`` or ``reward``)."""
    return any(not _is_absent(meta, name) for name in ("success", "won", "reward"))

"""A finished grid cell's summary: the small file kept in the repository, one per cell
(``<experiments.summaries_dir>/<preset>/<cell>.json``), from which the grid resumes on any
machine and its report is built (``experiments.resume``; docs/grid.md).

A summary holds (``FIELDS``):

- the cell (``cell``, ``method``, ``seed``, ``fraction``), its ``settings_hash``
  (``grid.settings_hash``) and the ``settings`` it covers as flat ``block.key`` paths (so a log
  can name the setting that changed), ``inputs`` (a hash of the starting weights and skill bank
  the cell read: a differing one is logged, not rerun), this machine's cache ``key``;
- where it came from: ``git_commit``, ``cpu`` (the machine that ran the cell), ``node``,
  ``run_id`` (its MLflow child run) and ``seconds``;
- its result: ``final`` (the end policy's held-out figures), ``env_steps``, ``end_update``;
  ``history``, every numeric per-update column as ``{column: {update: value}}`` (the held-out
  curve points, the mechanism and health figures; values at 6 significant digits, absent
  values left out); ``end_outcomes``, the end policy's held-out episodes grouped by agent,
  split, game, task type and trial, with their task seeds and a string of 0/1 wins.

``read_summary`` checks every field and names the file and the field that is wrong.
"""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path
from typing import Any

import pandas as pd

from hindsight.atomic import write_text_atomically

FORMAT = 1
_NUMBER = (int, float)
FIELDS: dict[str, tuple[type, ...]] = {
    "format": (int,), "cell": (str,), "method": (str,), "seed": (int,), "fraction": _NUMBER,
    "settings_hash": (str,), "settings": (dict,), "inputs": (str,), "key": (str,),
    "git_commit": (str,), "cpu": (str,), "node": (str, type(None)), "run_id": (str, type(None)), "seconds": (*_NUMBER, type(None)),
    "final": (dict,), "env_steps": (*_NUMBER, type(None)), "end_update": (int, type(None)),
    "history": (dict,), "end_outcomes": (list, type(None)),
}
"""Every field of a summary and the JSON types it may hold."""
_GROUP = ("agent", "eval_split", "env", "task_type", "trial")
"""What groups a summary's end outcomes; each group lists its task ``seeds`` and ``won``."""


class SummaryError(ValueError):
    """A summary file that cannot be read: names the file and the field."""


def summary_path(folder: str | Path, cell_name: str) -> Path:
    return Path(folder) / f"{cell_name}.json"


def flat_settings(settings: Any, prefix: str = "") -> dict[str, Any]:
    """Nested settings (JSON values) as ``{"block.key": leaf}``."""
    if not isinstance(settings, dict) or (prefix and not settings):
        return {prefix: settings}
    flat: dict[str, Any] = {}
    for name, value in settings.items():
        flat.update(flat_settings(value, f"{prefix}.{name}" if prefix else str(name)))
    return flat


def _compact(value: Any) -> int | float | None:
    """A number at 6 significant digits (integers exact); None for what is not a finite number."""
    if not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        return None
    number = float(value)
    if number.is_integer() and abs(number) < 2**53:
        return int(number)
    return float(f"{number:.6g}")


def _history(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    columns: dict[str, dict[str, Any]] = {}
    for row in rows:
        update = str(int(row["update"]))
        for column, value in row.items():
            kept = _compact(value)
            if column != "update" and kept is not None:
                columns.setdefault(column, {})[update] = kept
    return columns


def _outcome_groups(outcomes: dict[str, list] | None) -> list[dict[str, Any]] | None:
    if not outcomes:
        return None
    table = pd.DataFrame(outcomes)
    groups = []
    for key, rows in table.groupby(list(_GROUP), sort=False):
        group = {name: (int(value) if name == "trial" else str(value)) for name, value in zip(_GROUP, key)}
        groups.append({**group, "seeds": [int(s) for s in rows["seed"]], "won": "".join(str(int(w)) for w in rows["won"])})
    return groups


def summary_of(record: dict[str, Any], settings: dict[str, Any], digest: str, inputs: str, git_commit: str, cpu: str) -> dict[str, Any]:
    """The summary of a finished cell's grid record (``grid.run_grid``).

    Args:
        settings: The cell's settings as JSON values (``grid.comparable_settings``).
        digest: Their hash (``grid.settings_hash``).
        inputs: A hash of the weights and skill bank the cell read.
        git_commit: The commit the grid runs (``provenance.git_commit``).
        cpu: The machine's, when the cell's result does not name the one that ran it.
    """
    result = record.get("result") or {}
    return {
        "format": FORMAT, "cell": record["cell"], "method": record["method"], "seed": int(record["seed"]),
        "fraction": float(record["fraction"]), "settings_hash": digest, "settings": flat_settings(settings), "inputs": inputs,
        "key": str(record["key"]), "git_commit": git_commit, "cpu": str(result.get("cpu") or cpu),
        "node": record.get("node"), "run_id": record.get("run_id"), "seconds": _compact(record.get("seconds")),
        "final": {name: _compact(value) for name, value in (result.get("final") or {}).items() if _compact(value) is not None},
        "env_steps": _compact(result.get("env_steps")), "end_update": _compact(result.get("end_update")),
        "history": _history(result.get("history") or []), "end_outcomes": _outcome_groups(result.get("end_outcomes")),
    }


def write_summary(folder: str | Path, summary: dict[str, Any]) -> Path:
    """Write ``<folder>/<cell>.json`` atomically (a reader never sees half a file)."""
    path = summary_path(folder, summary["cell"])
    write_text_atomically(path, json.dumps(summary, indent=1, sort_keys=False) + "\n")
    return path


def _fail(path: Path, field: str, problem: str) -> SummaryError:
    return SummaryError(f"grid summary {path}: field '{field}' {problem}; fix or delete the file to run the cell again")


def _type_name(value: Any) -> str:
    return type(value).__name__ if value is not None else "null"


def _check(summary: Any, path: Path) -> dict[str, Any]:
    """``summary`` when every field is there with its type; else ``SummaryError`` naming one."""
    if not isinstance(summary, dict):
        raise _fail(path, "(top level)", f"must be a JSON object, got {_type_name(summary)}")
    for field, types in FIELDS.items():
        if field not in summary:
            raise _fail(path, field, "is missing")
        value = summary[field]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise _fail(path, field, f"must be {' or '.join(t.__name__ for t in types)}, got {_type_name(value)} {value!r:.60}")
    if summary["format"] != FORMAT:
        raise _fail(path, "format", f"is {summary['format']}, this code reads format {FORMAT}")
    if summary["cell"] != path.stem:
        raise _fail(path, "cell", f"is {summary['cell']!r}, but the file is named for {path.stem!r}")
    for name, value in summary["final"].items():
        if not isinstance(value, _NUMBER):
            raise _fail(path, f"final.{name}", f"must be a number, got {_type_name(value)}")
    for column, points in summary["history"].items():
        if not isinstance(points, dict):
            raise _fail(path, f"history.{column}", f"must map updates to values, got {_type_name(points)}")
        for update, value in points.items():
            if not update.isdigit() or not isinstance(value, _NUMBER):
                raise _fail(path, f"history.{column}", f"has update {update!r} -> {value!r}: updates are integers, values numbers")
    for index, group in enumerate(summary["end_outcomes"] or []):
        _check_group(group, path, f"end_outcomes[{index}]")
    return summary


def _check_group(group: Any, path: Path, where: str) -> None:
    if not isinstance(group, dict):
        raise _fail(path, where, f"must be an object, got {_type_name(group)}")
    for name in (*_GROUP, "seeds", "won"):
        if name not in group:
            raise _fail(path, f"{where}.{name}", "is missing")
    seeds, won = group["seeds"], group["won"]
    if not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds):
        raise _fail(path, f"{where}.seeds", "must be a list of integers")
    if not isinstance(won, str) or set(won) - {"0", "1"} or len(won) != len(seeds):
        raise _fail(path, f"{where}.won", f"must be a string of 0/1, one per seed ({len(seeds)}), got {won!r:.60}")


def read_summary(path: str | Path) -> dict[str, Any]:
    """One summary, checked (``SummaryError`` names the file and the field)."""
    path = Path(path)
    try:
        summary = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise _fail(path, "(JSON)", f"is not valid JSON: {error}") from error
    return _check(summary, path)


def read_summaries(folder: str | Path) -> dict[str, dict[str, Any]]:
    """Every summary in ``folder`` by cell name; {} when the folder does not exist."""
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    return {path.stem: read_summary(path) for path in sorted(folder.glob("*.json"))}


def _history_rows(history: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    updates = sorted({int(update) for points in history.values() for update in points})
    return [{"update": update, **{column: points.get(str(update), float("nan")) for column, points in history.items()}}
            for update in updates]


def _outcome_lists(groups: list[dict[str, Any]] | None) -> dict[str, list] | None:
    if not groups:
        return None
    lists: dict[str, list] = {name: [] for name in (*_GROUP, "seed", "won")}
    for group in groups:
        for seed, won in zip(group["seeds"], group["won"]):
            for name in _GROUP:
                lists[name].append(group[name])
            lists["seed"].append(seed)
            lists["won"].append(int(won))
    return lists


def record_of(summary: dict[str, Any], status: str) -> dict[str, Any]:
    """The grid record a summary stands for (the shape ``grid.run_grid`` returns), with ``status``."""
    fields = ("cell", "method", "seed", "fraction", "key", "run_id", "node", "seconds", "settings_hash", "inputs", "git_commit", "cpu")
    return {
        **{name: summary[name] for name in fields}, "status": status,
        "result": {
            "history": _history_rows(summary["history"]), "final": dict(summary["final"]), "env_steps": summary["env_steps"],
            "end_update": summary["end_update"], "end_outcomes": _outcome_lists(summary["end_outcomes"]),
        },
    }

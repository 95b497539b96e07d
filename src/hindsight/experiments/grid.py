"""The experiment grid: methods x seeds x training-task fractions, one RL run per cell.

Every cell has the same budget (updates, tasks per update, group size, so the same number
of episodes) and is evaluated on the same held-out tasks; a method (``methods.METHODS``) is
a starting checkpoint and overrides of the RL settings.

A cell's key hashes its settings and the fingerprint of its inputs (the starting weights
and the skill bank), so a re-run skips the cells already finished on the same data and
redoes them when the data changed; display and memory settings (``EXECUTION_ONLY_SETTINGS``)
are not part of it. A failed cell is recorded as failed; the grid goes on. Several
processes may share one cache folder and split the cells between them (``run_grid``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hindsight.experiments.methods import METHODS
from hindsight.training.rl_config import RLConfig, with_overrides

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class Cell:
    """One training run of the grid."""

    method: str
    seed: int
    fraction: float

    @property
    def name(self) -> str:
        return f"{self.method}-f{int(round(100 * self.fraction))}-s{self.seed}"


@dataclass
class GridSpec:
    """Which cells to run."""

    methods: list[str] = field(default_factory=lambda: list(METHODS))
    """Methods run at every fraction in ``fractions_all``."""
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    """RL seeds (task sampling, rollouts, mini-batch order)."""
    fractions: list[float] = field(default_factory=lambda: [1.0])
    """Training-task fractions of the data-efficiency study."""
    fraction_methods: list[str] = field(default_factory=lambda: ["grpo", "seed"])
    """Methods also run at the fractions below 1 (the others only at 1.0)."""

    def cells(self) -> list[Cell]:
        unknown = sorted(set(self.methods + self.fraction_methods) - set(METHODS))
        if unknown:
            raise ValueError(f"experiments.grid: unknown method(s) {unknown}; known: {sorted(METHODS)}")
        # Seed by seed, so a grid stopped early still has every method for the first seeds.
        cells = []
        for seed in self.seeds:
            for fraction in sorted(set(self.fractions), reverse=True):
                methods = self.methods if fraction == 1.0 else [m for m in self.methods if m in self.fraction_methods]
                cells.extend(Cell(method=method, seed=int(seed), fraction=float(fraction)) for method in methods)
        return cells


def cell_rl_config(base: RLConfig, cell: Cell) -> tuple[str, RLConfig]:
    """(start_from, RL settings) of one cell: the grid's base settings + the method's
    overrides + the cell's task fraction (its seed is the run's seed)."""
    method = METHODS[cell.method]
    return method.start_from, with_overrides(base, {**method.rl, "task_fraction": cell.fraction})


EXECUTION_ONLY_SETTINGS = frozenset({"progress", "micro_batch_tokens"})
"""Settings that change how a cell runs (a progress bar; how a mini-batch is split into
micro-batches for memory, with the same loss) but not what it computes: left out of the key,
like the number of torch threads, so changing them never retrains finished cells."""


def _without_execution_settings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_execution_settings(v) for k, v in value.items() if k not in EXECUTION_ONLY_SETTINGS}
    if isinstance(value, list):
        return [_without_execution_settings(v) for v in value]
    return value


def cell_key(cell: Cell, settings: dict[str, Any], input_fingerprint: str) -> str:
    """Hash of everything that decides a cell's result (execution-only settings left out)."""
    blob = json.dumps(
        {"cell": cell.__dict__, "settings": _without_execution_settings(settings), "inputs": input_fingerprint},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def run_grid(
    cells: list[Cell],
    run_cell: Callable[[Cell], dict[str, Any]],
    key_of: Callable[[Cell], str],
    cache_dir: str | Path,
    start_child_run: Callable[[Cell, str], Any] | None = None,
    poll_seconds: float = 10.0,
) -> list[dict[str, Any]]:
    """Run every cell not already finished; return one record per cell.

    Several processes (or machines sharing the folder) may run the same grid on one
    ``cache_dir``: a process claims a cell before running it (``<key>.claim``, created
    exclusively), skips the cells claimed by another live process, and at the end waits for
    their records, so every process returns the whole grid and no cell runs twice. A claim
    left by a dead process on this host is taken over; one left on another host stays until
    its file is deleted.

    Args:
        cells: The grid.
        run_cell: Trains and evaluates one cell; returns its result record (history,
            final evaluation). Runs inside the cell's MLflow child run when
            ``start_child_run`` is given.
        key_of: The cell's cache key.
        cache_dir: Where finished cells' records are kept (``<key>.json``).
        start_child_run: ``(cell, key) -> context manager`` opening the cell's MLflow
            child run and yielding its run id.
        poll_seconds: How often to look for the records of cells another process runs.

    Returns:
        Records with ``cell`` fields, ``key``, ``status`` (finished / failed / skipped =
        finished earlier or by another process), ``run_id``, ``seconds`` and the result.
    """
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    records: dict[int, dict[str, Any]] = {}
    waiting: dict[int, float] = {}  # cell index -> when we found it claimed
    for index, cell in enumerate(cells):
        outcome = _stored_or_run(index, cells, run_cell, key_of(cell), cache, start_child_run)
        if outcome is None:
            logger.info("[%d/%d] %s: running in another process, taken up at the end", index + 1, len(cells), cell.name)
            waiting[index] = time.time()
        else:
            records[index] = outcome
    while waiting:
        for index, since in list(waiting.items()):
            outcome = _stored_or_run(index, cells, run_cell, key_of(cells[index]), cache, start_child_run, failed_after=since)
            if outcome is not None:
                records[index] = outcome
                del waiting[index]
        if waiting:
            time.sleep(poll_seconds)
    return [records[index] for index in range(len(cells))]


def _stored_or_run(index, cells, run_cell, key, cache, start_child_run, failed_after: float | None = None) -> dict[str, Any] | None:
    """The cell's finished record, else run it under a claim; None while another live
    process holds the claim. ``failed_after``: a failed record written after this time (by
    the process we waited for) is taken as the cell's outcome instead of running it again."""
    stored = cache / f"{key}.json"
    claim = CellClaim(cache / f"{key}.claim")
    record = _stored_record(stored, failed_after)
    if record is None and not claim.take():
        return None
    try:
        record = record or _stored_record(stored, failed_after)  # written while we claimed
        if record is not None:
            logger.info("[%d/%d] %s: %s earlier (run %s), skipped", index + 1, len(cells), cells[index].name, record["status"], record.get("run_id"))
            return {**record, "status": "skipped" if record["status"] == "finished" else record["status"]}
        return _run_cell(index, cells, run_cell, key, stored, start_child_run)
    finally:
        claim.release()


def _stored_record(stored: Path, failed_after: float | None) -> dict[str, Any] | None:
    if not stored.is_file():
        return None
    record = json.loads(stored.read_text())
    if record.get("status") == "finished":
        return record
    written_while_waiting = failed_after is not None and stored.stat().st_mtime >= failed_after
    return record if written_while_waiting else None


def _run_cell(index, cells, run_cell, key, stored: Path, start_child_run) -> dict[str, Any]:
    cell = cells[index]
    started = time.perf_counter()
    record: dict[str, Any] = {**cell.__dict__, "cell": cell.name, "key": key, "run_id": None}
    context = start_child_run(cell, key) if start_child_run else _null_context()
    try:
        with context as run_id:
            record["run_id"] = run_id
            logger.info("[%d/%d] %s: running", index + 1, len(cells), cell.name)
            record.update(status="finished", result=run_cell(cell))
    except Exception as error:  # a failed cell is recorded and the grid goes on
        logger.error("[%d/%d] %s failed: %s", index + 1, len(cells), cell.name, error)
        record.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc(limit=5))
    record["seconds"] = time.perf_counter() - started
    partial = stored.with_suffix(f".json.{os.getpid()}.partial")
    partial.write_text(json.dumps(record, default=str))
    partial.replace(stored)
    return record


class CellClaim:
    """A cell's claim file: created exclusively (``O_EXCL``) by the process that runs the
    cell, holding its host and pid, removed when the cell's record is written."""

    def __init__(self, path: Path):
        self.path = path
        self.held = False

    def take(self) -> bool:
        """Claim the cell; False when another live process holds it."""
        for _ in range(2):
            try:
                descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                if not self._stale():
                    return False
                self.path.unlink(missing_ok=True)  # its process died: take it over
                continue
            with os.fdopen(descriptor, "w") as handle:
                json.dump({"host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}, handle)
            self.held = True
            return True
        return False

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False

    def _stale(self) -> bool:
        """The claim's process is gone (checkable on this host only)."""
        try:
            holder = json.loads(self.path.read_text())
        except FileNotFoundError:
            return True
        except (OSError, ValueError):  # being written right now
            return False
        if holder.get("host") != socket.gethostname():
            return False
        try:
            os.kill(int(holder["pid"]), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


class _null_context:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False

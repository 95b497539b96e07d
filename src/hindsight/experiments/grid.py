"""The experiment grid: methods x seeds x training-task fractions, one RL run per cell.

Every cell has the same budget (updates, tasks per update, group size, so the same number
of episodes) and is evaluated on the same held-out tasks; a method (``methods.METHODS``) is
a starting checkpoint and overrides of the RL settings.

A cell's key hashes its settings and the fingerprint of its inputs (the starting weights
and the skill bank), so a re-run skips the cells this machine's cache holds finished on the
same data and redoes them when the data changed; display and memory settings
(``EXECUTION_ONLY_SETTINGS``) are not part of it. Its settings hash (``settings_hash``) leaves
the weights out: the committed summaries carry it, so a grid resumes on any machine
(``experiments.resume``). A failed cell is recorded as failed; the grid goes on. The cells run in
this process, or as Ray tasks on a local instance or a cluster (``ray_grid``); the process
that runs the grid writes every record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import socket
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from hindsight.atomic import write_text_atomically
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


def comparable_settings(settings: dict[str, Any]) -> Any:
    """The settings as JSON values (tuples as lists, other objects as text), execution-only
    settings left out: what a cell's settings hash covers and its summary keeps."""
    return json.loads(json.dumps(_without_execution_settings(settings), sort_keys=True, default=str))


def settings_hash(cell: Cell, settings: dict[str, Any]) -> str:
    """Hash of the cell and its settings alone (``comparable_settings``), not of the weights it
    starts from: the same on every machine, so a committed summary with this hash means the
    cell is done (``experiments.resume``)."""
    blob = json.dumps({"cell": cell.__dict__, "settings": comparable_settings(settings)}, sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def cell_key(cell: Cell, settings: dict[str, Any], input_fingerprint: str) -> str:
    """Hash of everything that decides a cell's result (execution-only settings left out)."""
    blob = json.dumps(
        {"cell": cell.__dict__, "settings": _without_execution_settings(settings), "inputs": input_fingerprint},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CellJob:
    """A cell to run: its place in the grid and its cache key."""

    index: int
    total: int
    cell: Cell
    key: str


Executor = Callable[..., Iterator[tuple[int, dict[str, Any]]]]
"""``(jobs, run_cell, start_child_run) -> (index, record)`` pairs as cells end, in any order
(``hindsight.experiments.ray_grid.RayExecutor``); None runs them here, one after another."""


def run_grid(
    cells: list[Cell],
    run_cell: Callable[[Cell], dict[str, Any]],
    key_of: Callable[[Cell], str],
    cache_dir: str | Path,
    start_child_run: Callable[..., Any] | None = None,
    executor: Executor | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every cell not already finished; return one record per cell.

    A cell whose finished record is in ``cache_dir`` is skipped; the others run in this
    process one after another (``executor`` None) or through ``executor`` (Ray tasks on a
    local instance or a cluster: ``ray_grid.RayExecutor``). This process writes every record.

    Args:
        cells: The grid.
        run_cell: Trains and evaluates one cell; returns its result record (history,
            final evaluation). Runs inside the cell's MLflow child run when
            ``start_child_run`` is given.
        key_of: The cell's cache key.
        cache_dir: Where finished cells' records are kept (``<key>.json``).
        start_child_run: ``(cell, key, node) -> context manager`` opening the cell's MLflow
            child run (tagged with the node) and yielding its run id.
        executor: Where the cells run; None: here.
        on_record: Called with each cell's record once it is final (skipped, or stored as it
            ends), in this process: ``experiments.resume`` writes the cell's summary there.

    Returns:
        Records with ``cell`` fields, ``key``, ``status`` (finished / failed / skipped =
        finished earlier), ``run_id``, ``node`` (where it ran), ``seconds`` (its wall time)
        and the result.
    """
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    records: dict[int, dict[str, Any]] = {}
    jobs = []
    for index, cell in enumerate(cells):
        job = CellJob(index=index, total=len(cells), cell=cell, key=key_of(cell))
        stored = _stored_record(cache / f"{job.key}.json")
        if stored is None:
            jobs.append(job)
            continue
        logger.info("[%d/%d] %s: finished earlier (run %s), skipped", index + 1, len(cells), cell.name, stored.get("run_id"))
        records[index] = {**stored, "status": "skipped"}
        if on_record is not None:
            on_record(records[index])
    outcomes = executor(jobs, run_cell, start_child_run) if executor is not None else (
        (job.index, run_cell_record(job, run_cell, start_child_run, {"node": socket.gethostname()})) for job in jobs
    )
    for index, record in outcomes:
        _store(cache / f"{record['key']}.json", record)
        records[index] = record
        if on_record is not None:
            on_record(record)
    return [records[index] for index in range(len(cells))]


def _stored_record(stored: Path) -> dict[str, Any] | None:
    """The cell's finished record (a failed one is run again)."""
    if not stored.is_file():
        return None
    record = json.loads(stored.read_text())
    return record if record.get("status") == "finished" else None


def _store(stored: Path, record: dict[str, Any]) -> None:
    write_text_atomically(stored, json.dumps(record, default=str))


def run_cell_record(job: CellJob, run_cell, start_child_run, node: dict[str, Any]) -> dict[str, Any]:
    """Run one cell in its child run; its record. An exception is the cell's failure: recorded
    (error and traceback), never raised, so the grid goes on.

    Args:
        node: Where it runs (``node``: a name for the report; a Ray run adds ``ray_node_id``).
    """
    cell = job.cell
    started = time.perf_counter()
    record: dict[str, Any] = {**cell.__dict__, "cell": cell.name, "key": job.key, "run_id": None, **node}
    context = start_child_run(cell, job.key, node) if start_child_run else contextlib.nullcontext()
    try:
        with context as run_id:
            record["run_id"] = run_id
            logger.info("[%d/%d] %s: running on %s", job.index + 1, job.total, cell.name, node["node"])
            record.update(status="finished", result=run_cell(cell))
    except Exception as error:  # a failed cell is recorded and the grid goes on
        logger.error("[%d/%d] %s failed: %s", job.index + 1, job.total, cell.name, error)
        record.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc(limit=5))
    record["seconds"] = time.perf_counter() - started
    return record

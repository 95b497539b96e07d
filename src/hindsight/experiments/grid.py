"""The experiment grid: methods x seeds x training-task fractions, one RL run per cell.

Every cell has the same budget (updates, tasks per update, group size, so the same number
of episodes) and is evaluated on the same held-out tasks; a method (``methods.METHODS``) is
a starting checkpoint and overrides of the RL settings.

A cell's key hashes its settings and the fingerprint of its inputs (the starting weights
and the skill bank), so a re-run skips the cells already finished on the same data and
redoes them when the data changed; display and memory settings (``EXECUTION_ONLY_SETTINGS``)
are not part of it. A failed cell is recorded as failed; the grid goes on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hindsight.experiments.methods import METHODS
from hindsight.training.rl_config import RLConfig

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
    return method.start_from, dataclasses.replace(base, **method.rl, task_fraction=cell.fraction)


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
) -> list[dict[str, Any]]:
    """Run every cell not already finished; return one record per cell.

    Args:
        cells: The grid.
        run_cell: Trains and evaluates one cell; returns its result record (history,
            final evaluation). Runs inside the cell's MLflow child run when
            ``start_child_run`` is given.
        key_of: The cell's cache key.
        cache_dir: Where finished cells' records are kept (``<key>.json``).
        start_child_run: ``(cell, key) -> context manager`` opening the cell's MLflow
            child run and yielding its run id.

    Returns:
        Records with ``cell`` fields, ``key``, ``status`` (finished / failed / skipped =
        finished earlier), ``run_id``, ``seconds`` and the result.
    """
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    records = []
    for index, cell in enumerate(cells):
        key = key_of(cell)
        stored = cache / f"{key}.json"
        if stored.is_file():
            record = json.loads(stored.read_text())
            if record.get("status") == "finished":
                logger.info("[%d/%d] %s: finished earlier (run %s), skipped", index + 1, len(cells), cell.name, record.get("run_id"))
                records.append({**record, "status": "skipped"})
                continue
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
        partial = stored.with_suffix(".json.partial")
        partial.write_text(json.dumps(record, default=str))
        partial.replace(stored)
        records.append(record)
    return records


class _null_context:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False

"""The grid run resumably from its committed summaries (``experiments.summaries``).

On start every summary of the preset's folder is read and checked (a corrupted one stops the
grid, naming the file and the field). A cell whose summary holds the settings hash it has now
(``grid.settings_hash``: the cell and its settings, not the weights it starts from) is done,
on this machine or another: it is skipped. A cell whose settings changed is run again, and
the log names the settings that changed; one whose summary was trained from other starting
weights (another machine's default run) is kept, and the log says so. The others run through
``grid.run_grid`` (this machine's cache of whole records first), and each finished cell's
summary is written as the cell ends, so a grid stopped half-way resumes where it stopped.

The records returned are read back from the summaries (failed cells, which have none, as they
ran), so the report is built from the summaries alone: the same on every machine.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from hindsight.experiments import provenance
from hindsight.experiments.grid import Cell, Executor, comparable_settings, run_grid, settings_hash
from hindsight.experiments.summaries import flat_settings, read_summaries, record_of, summary_of, summary_path, write_summary

logger = logging.getLogger(__name__)


class CellIdentity(Protocol):
    """What names a cell's result (``pipelines.experiments.nodes.GridRun``)."""

    def key(self, cell: Cell) -> str:
        """This machine's cache key (settings and the weights read)."""

    def settings_of(self, cell: Cell) -> dict[str, Any]:
        """Every setting that decides the cell's result."""

    def fingerprint(self, cell: Cell) -> str:
        """The weights and skill bank the cell reads."""


@dataclass(frozen=True)
class _Plan:
    settings: Any
    digest: str
    inputs: str


def _plan(cell: Cell, identity: CellIdentity) -> _Plan:
    settings = identity.settings_of(cell)
    inputs = hashlib.sha1(identity.fingerprint(cell).encode()).hexdigest()[:16]
    return _Plan(comparable_settings(settings), settings_hash(cell, settings), inputs)


def changed_settings(stored: dict[str, Any], now: Any, shown: int = 5) -> str:
    """The flat settings that differ between a summary's and the cell's now, as text."""
    current = flat_settings(now)
    names = sorted(set(stored) | set(current))
    changes = [f"{name}: {stored.get(name, '(absent)')!r} -> {current.get(name, '(absent)')!r}"
               for name in names if stored.get(name, "(absent)") != current.get(name, "(absent)")]
    more = f" and {len(changes) - shown} more" if len(changes) > shown else ""
    return "; ".join(changes[:shown]) + more if changes else "the cell's identity"


def _still_done(cell: Cell, summary: dict[str, Any] | None, plan: _Plan, folder: Path) -> bool:
    """Whether ``summary`` stands for the cell as it is set now (logged either way)."""
    path = summary_path(folder, cell.name)
    if summary is None:
        return False
    if summary["settings_hash"] != plan.digest:
        logger.info("%s: its settings changed since %s (%s): run again", cell.name, path, changed_settings(summary["settings"], plan.settings))
        return False
    if summary["inputs"] != plan.inputs:
        logger.warning("%s: kept from %s, which was trained from other starting weights or skill bank than this machine's "
                       "(inputs %s, here %s); delete the file to run it again on these", cell.name, path, summary["inputs"], plan.inputs)
    logger.info("%s: finished earlier (%s: commit %s, %s): skipped", cell.name, path, summary["git_commit"], summary["cpu"])
    return True


def run_resumable_grid(
    cells: list[Cell],
    run_cell: Callable[[Cell], dict[str, Any]],
    identity: CellIdentity,
    cache_dir: str | Path,
    summaries_dir: str | Path,
    start_child_run: Callable[..., Any] | None = None,
    executor: Executor | None = None,
) -> list[dict[str, Any]]:
    """Run the cells that no summary stands for; one record per cell, from the summaries.

    Args:
        cells: The grid.
        run_cell: Trains and evaluates one cell (``grid.run_grid``).
        identity: The cells' settings, cache keys and inputs.
        cache_dir: This machine's cache of whole records (``grid.run_grid``).
        summaries_dir: The preset's summaries folder (``ExperimentsConfig.summaries_folder``).
        start_child_run: Opens a cell's MLflow child run (``grid.run_grid``).
        executor: Where the cells run (``grid.run_grid``).

    Returns:
        ``grid.run_grid``'s records in cell order: a finished cell's read back from its summary
        (status finished, or skipped when it ran earlier), a failed one as it ran.

    Raises:
        SummaryError: A summary in ``summaries_dir`` that cannot be read (file and field named).
    """
    folder = Path(summaries_dir)
    stored = read_summaries(folder)
    plans = {cell.name: _plan(cell, identity) for cell in cells}
    todo = [cell for cell in cells if not _still_done(cell, stored.get(cell.name), plans[cell.name], folder)]
    logger.info("grid: %d of %d cells done in %s, %d to run", len(cells) - len(todo), len(cells), folder, len(todo))
    commit, machine = provenance.git_commit(), provenance.cpu_model()

    def keep(record: dict[str, Any]) -> None:
        if record["status"] in ("finished", "skipped"):
            plan = plans[record["cell"]]
            write_summary(folder, summary_of(record, plan.settings, plan.digest, plan.inputs, commit, machine))

    ran = {record["cell"]: record for record in run_grid(todo, run_cell, identity.key, cache_dir, start_child_run, executor, on_record=keep)}
    summaries = read_summaries(folder)
    records = []
    for cell in cells:
        record = ran.get(cell.name)
        if record is not None and record["status"] == "failed":
            records.append(record)
        else:
            records.append(record_of(summaries[cell.name], "finished" if record and record["status"] == "finished" else "skipped"))
    return records

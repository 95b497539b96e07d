"""Several processes on one grid cache: each cell runs once, every process returns the grid."""

import json
import multiprocessing
import os
import socket
import subprocess
import threading
import time

from hindsight.experiments.grid import Cell, CellClaim, run_grid

CELLS = [Cell(method, seed, 1.0) for seed in (0, 1) for method in ("grpo", "seed", "gigpo")]


def _grid_process(cache_dir, log_path, reverse, queue):
    def run_cell(cell):
        with open(log_path, "a") as log:
            log.write(f"{cell.name} {os.getpid()}\n")
        time.sleep(0.2)
        return {"final": {"eval/x": 1.0}}

    cells = list(reversed(CELLS)) if reverse else CELLS
    records = run_grid(cells, run_cell, key_of=lambda cell: cell.name, cache_dir=cache_dir, poll_seconds=0.05)
    queue.put([(r["cell"], r["status"]) for r in records])


def test_two_processes_split_the_cells_and_both_return_the_whole_grid(tmp_path):
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    log = tmp_path / "ran.log"
    workers = [context.Process(target=_grid_process, args=(tmp_path / "cache", log, reverse, queue)) for reverse in (False, True)]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    ran = [line.split() for line in log.read_text().splitlines()]
    assert sorted(name for name, _ in ran) == sorted(cell.name for cell in CELLS)  # each cell once
    assert len({pid for _, pid in ran}) == 2  # both processes worked
    for records in results:
        assert sorted(name for name, _ in records) == sorted(cell.name for cell in CELLS)
        assert {status for _, status in records} <= {"finished", "skipped"}
    assert not list((tmp_path / "cache").glob("*.claim"))


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_claim_left_by_a_dead_process_is_taken_over(tmp_path):
    (tmp_path / "grpo-f100-s0.claim").write_text(json.dumps({"host": socket.gethostname(), "pid": _dead_pid()}))
    records = run_grid(CELLS[:1], lambda cell: {"final": {}}, key_of=lambda cell: cell.name, cache_dir=tmp_path)
    assert records[0]["status"] == "finished"
    assert not (tmp_path / "grpo-f100-s0.claim").exists()


def test_a_live_claim_is_waited_for_and_its_failed_record_taken_as_is(tmp_path):
    claim = tmp_path / "grpo-f100-s0.claim"
    claim.write_text(json.dumps({"host": "another-machine", "pid": 1}))
    ran = []

    def other_machine_fails_the_cell():
        time.sleep(0.3)
        (tmp_path / "grpo-f100-s0.json").write_text(json.dumps({"cell": "grpo-f100-s0", "status": "failed", "error": "boom"}))
        claim.unlink()

    helper = threading.Thread(target=other_machine_fails_the_cell)
    helper.start()
    started = time.perf_counter()
    records = run_grid(CELLS[:2], lambda cell: ran.append(cell.name) or {"final": {}}, key_of=lambda cell: cell.name,
                       cache_dir=tmp_path, poll_seconds=0.05)
    helper.join()
    assert time.perf_counter() - started >= 0.3  # it waited for the other machine
    assert ran == ["seed-f100-s0"]  # the claimed cell was not run a second time
    assert [r["status"] for r in records] == ["failed", "finished"]


def test_a_claim_is_exclusive(tmp_path):
    first, second = CellClaim(tmp_path / "a.claim"), CellClaim(tmp_path / "a.claim")
    assert first.take() and not second.take()
    first.release()
    assert second.take()

"""The grid on a real two-node Ray cluster on this machine (``ray_cluster.LocalRayCluster``:
``ray start --head`` and ``ray start --address``, one CPU each): the cells land on both nodes
(Ray's node ids, recorded per cell), the records equal the local loop's, a cell that raises
is recorded as failed and not retried, a SIGKILLed worker's cell is run again (bounded by
``max_retries``), and a node stopped mid-grid loses no cell (its cell runs again on the
other node). The cells are small torch computations, so the cluster is what is measured."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from hindsight.experiments.grid import Cell, run_grid
from hindsight.experiments.ray_grid import RayExecutor
from hindsight.ray_runtime import import_ray
from ray_cluster import LocalRayCluster

pytestmark = pytest.mark.slow  # starts a Ray cluster (two nodes): `-m slow` (CI runs it)

CELLS = [Cell(method, seed, 1.0) for seed in (0, 1) for method in ("grpo", "seed")]


@pytest.fixture(scope="module")
def cluster():
    ray = import_ray()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the cells below, for the workers
    cluster = LocalRayCluster()
    try:
        head = cluster.start_node(head=True)
        cluster.wait_for_nodes(1)
        worker = cluster.start_node(head=False)
        head_id, = [node["NodeID"] for node in ray.nodes() if node["Alive"]]
        ids = cluster.wait_for_nodes(2)
        worker_id, = [node_id for node_id in ids if node_id != head_id]
        yield cluster, {"head": (head, head_id), "worker": (worker, worker_id)}
    finally:
        cluster.close()
        assert not cluster.leftovers(), "a Ray process of the test cluster outlived it"


def _ran(log: Path, cell: Cell) -> None:
    import ray

    with open(log, "a") as handle:
        handle.write(json.dumps({"cell": cell.name, "node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}) + "\n")


def _runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


class Training:
    """A cell: a seeded torch fit (the same numbers wherever it runs), logged when it starts."""

    def __init__(self, log: Path, seconds: float = 0.0, kill_once: str | None = None, fail: str | None = None):
        self.log, self.seconds, self.kill_once, self.fail = log, seconds, kill_once, fail

    def __call__(self, cell: Cell) -> dict:
        import torch

        _ran(self.log, cell)
        if cell.name == self.fail:
            raise ValueError(f"{cell.name} diverged")
        if cell.name == self.kill_once and sum(run["cell"] == cell.name for run in _runs(self.log)) == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies mid-cell, once
        time.sleep(self.seconds)
        generator = torch.Generator().manual_seed(1000 * cell.seed + len(cell.method))
        weights = torch.zeros(8, requires_grad=True)
        inputs, targets = torch.randn(64, 8, generator=generator), torch.randn(64, generator=generator)
        optimizer = torch.optim.SGD([weights], lr=0.1)
        for _ in range(20):
            optimizer.zero_grad()
            loss = ((inputs @ weights - targets) ** 2).mean()
            loss.backward()
            optimizer.step()
        return {"final": {"eval/loss": float(loss.detach())}, "weights": weights.detach().tolist()}


def _without_placement(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("node", "ray_node_id", "seconds")}


def test_cells_land_on_both_nodes_with_the_local_loops_records(cluster, tmp_path):
    _, nodes = cluster
    local = run_grid(CELLS, Training(tmp_path / "local.log"), key_of=lambda c: c.name, cache_dir=tmp_path / "local")
    on_ray = run_grid(CELLS, Training(tmp_path / "ray.log", seconds=1.0), key_of=lambda c: c.name, cache_dir=tmp_path / "ray",
                      executor=RayExecutor())
    assert [_without_placement(r) for r in on_ray] == [_without_placement(r) for r in local]
    assert {r["status"] for r in on_ray} == {"finished"}
    assert {r["ray_node_id"] for r in on_ray} == {nodes["head"][1], nodes["worker"][1]}  # both nodes ran cells
    assert {run["node"] for run in _runs(tmp_path / "ray.log")} == {r["ray_node_id"] for r in on_ray}  # Ray's own record
    assert all(r["node"].endswith(r["ray_node_id"][:8]) and r["seconds"] >= 1.0 for r in on_ray)
    stored = json.loads((tmp_path / "ray" / f"{CELLS[0].name}.json").read_text())
    assert stored["ray_node_id"] == on_ray[0]["ray_node_id"]  # the record kept in the cache names its node


def test_a_failing_cell_is_recorded_once_and_a_killed_worker_is_run_again(cluster, tmp_path):
    log = tmp_path / "runs.log"
    cell = Training(log, fail="seed-f100-s0", kill_once="grpo-f100-s1")
    records = run_grid(CELLS, cell, key_of=lambda c: c.name, cache_dir=tmp_path, executor=RayExecutor(max_retries=1))
    assert [r["status"] for r in records] == ["finished", "failed", "finished", "finished"]
    assert "ValueError: seed-f100-s0 diverged" in records[1]["error"]
    runs = [run["cell"] for run in _runs(log)]
    assert runs.count("seed-f100-s0") == 1  # its own failure: not retried
    assert runs.count("grpo-f100-s1") == 2  # killed once, then run again by Ray
    # with no retries left, the killed worker's cell is failed and the grid goes on
    again = run_grid(CELLS[2:3], Training(tmp_path / "runs2.log", kill_once="grpo-f100-s1"), key_of=lambda c: "other-" + c.name,
                     cache_dir=tmp_path, executor=RayExecutor(max_retries=0))
    assert again[0]["status"] == "failed" and "died 1 time(s)" in again[0]["error"]


def test_a_node_stopped_mid_grid_loses_no_cell(cluster, tmp_path):
    """Last in this file: it stops the worker node."""
    local_cluster, nodes = cluster
    worker, worker_id = nodes["worker"]
    log = tmp_path / "runs.log"
    stopped = threading.Event()

    def stop_the_worker_node_once_it_runs_a_cell():
        deadline = time.time() + 60
        while time.time() < deadline and not any(run["node"] == worker_id for run in _runs(log)):
            time.sleep(0.1)
        local_cluster.stop_node(worker)
        stopped.set()

    stopper = threading.Thread(target=stop_the_worker_node_once_it_runs_a_cell)
    stopper.start()
    records = run_grid(CELLS, Training(log, seconds=3.0), key_of=lambda c: c.name, cache_dir=tmp_path,
                       executor=RayExecutor(max_retries=2))
    stopper.join()
    assert stopped.is_set() and worker.poll() is not None
    assert [r["status"] for r in records] == ["finished"] * len(CELLS)
    interrupted = {run["cell"] for run in _runs(log) if run["node"] == worker_id}
    assert interrupted  # the cell the worker node was running when it stopped ...
    for record in records:
        if record["cell"] in interrupted:  # ... was run again on the head
            assert record["ray_node_id"] == nodes["head"][1]

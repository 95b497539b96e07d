"""What the Ray executor of the experiment grid costs per cell on this machine: the same cells
through ``grid.run_grid`` with the local loop and on a two-node Ray cluster on 127.0.0.1.

The cluster: ``ray start --head`` + ``ray start --address``, one CPU each
(tests/experiments/ray_cluster.py).

Two kinds of cell: an empty one (the executor's own cost: submit, schedule, a worker's
payload, the record back) and a fixed torch computation on one thread (about a second).
Overhead per cell = (wall time x worker slots - the cells' own seconds) / cells: the time a
slot spent on anything but a cell. The cluster's start and each node's first worker process
are printed apart (once per grid and node).

    python benchmarks/grid_executor.py [--cells 8] [--work 1200]

docs/scale.md quotes its output, with the CPU.
"""

from __future__ import annotations

GROUP = "hardware"
REPRODUCES = ("docs/scale.md#the-experiment-grid-on-ray",)
MEASURED = (
    "run time not given (the cluster starts in 12.3 s, 8 working cells take 4-8 s); a shared 2-core AMD "
    "EPYC with AVX-512 bf16"
)
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/scale.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "experiments"))

from hindsight.experiments.grid import Cell, run_grid  # noqa: E402
from hindsight.experiments.ray_grid import RayExecutor  # noqa: E402
from hindsight.ray_runtime import import_ray  # noqa: E402


class Work:
    """A cell: ``steps`` 256x256 matrix products on one torch thread (none for 0)."""

    def __init__(self, steps: int):
        self.steps = steps

    def __call__(self, cell: Cell) -> dict:
        import torch

        torch.set_num_threads(1)
        matrix = torch.randn(256, 256, generator=torch.Generator().manual_seed(cell.seed))
        for _ in range(self.steps):
            matrix = torch.tanh(matrix @ matrix)
        return {"final": {"eval/x": float(matrix.mean())}}


def measure(cells: list[Cell], work: Work, executor, slots: int) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        records = run_grid(cells, work, key_of=lambda c: c.name, cache_dir=cache, executor=executor)
        wall = time.perf_counter() - started
    assert all(r["status"] == "finished" for r in records), records
    own = sum(r["seconds"] for r in records)
    return {"wall": wall, "cell": own / len(cells), "overhead": (wall * slots - own) / len(cells),
            "nodes": len({r.get("ray_node_id") or r["node"] for r in records})}


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=8)
    parser.add_argument("--work", type=int, default=1200, help="matrix products per working cell")
    args = parser.parse_args()
    from ray_cluster import LocalRayCluster

    cells = [Cell("grpo", seed, 1.0) for seed in range(args.cells)]
    ray = import_ray()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    print(f"CPU: {cpu_name()} ({len(__import__('os').sched_getaffinity(0))} cores), ray {ray.__version__}, {args.cells} cells")
    local = {name: measure(cells, Work(steps), None, 1) for name, steps in (("empty", 0), ("work", args.work))}
    cluster = LocalRayCluster()
    try:
        started = time.perf_counter()
        cluster.start_node(head=True)
        cluster.wait_for_nodes(1)
        cluster.start_node(head=False)
        cluster.wait_for_nodes(2)
        print(f"two-node cluster up in {time.perf_counter() - started:.1f} s")
        warm = measure(cells[:2], Work(0), RayExecutor(), 2)  # each node's first worker process starts here
        print(f"first cell on each node (a worker process starts, imports torch and the grid): {warm['wall']:.1f} s")
        on_ray = {name: measure(cells, Work(steps), RayExecutor(), 2) for name, steps in (("empty", 0), ("work", args.work))}
    finally:
        cluster.close()
    print("| cell | executor | nodes | wall s | cell s (own) | overhead s per cell |")
    print("|---|---|---:|---:|---:|---:|")
    for name in ("empty", "work"):
        for executor, figures in (("local", local[name]), ("ray, 2 nodes x 1 CPU", on_ray[name])):
            print(f"| {name} | {executor} | {figures['nodes']} | {figures['wall']:.2f} | {figures['cell']:.3f} | {figures['overhead']:.3f} |")


if __name__ == "__main__":
    main()

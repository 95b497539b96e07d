"""The experiment grid on Ray (``experiments.executor: ray``): each cell a Ray task with its
resources declared, on a local Ray instance (``ray.init()``) or a cluster (its address).

Ray schedules the cells by CPUs, GPUs and memory over the cluster's nodes and runs a cell
again when its worker process or its node dies (``max_retries``, bounded); a cell that raises
is recorded as failed by the task itself (``grid.run_cell_record``) and never retried, as in
the local loop. The grid's shared state (``run_cell``'s checkpoints and settings, the child
run opener) goes to the object store once and is unpacked once per worker process. Every
record says which node ran it (Ray's node id), and the cell's MLflow child run is tagged
with it. Ray is imported here only, when this executor runs.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator

from hindsight.experiments.grid import CellJob, run_cell_record
from hindsight.ray_runtime import import_ray

logger = logging.getLogger(__name__)

_WORKER_PAYLOADS: dict[str, Any] = {}
"""In a worker process: the grid payload it unpacked (by object id), kept for its next cells."""


class RayExecutor:
    """Runs a grid's cells as Ray tasks (``grid.run_grid(executor=...)``).

    Args:
        address: The cluster's head (``host:port`` or ``auto``); None starts a local instance
            (or uses the one this process already started).
        num_cpus, num_gpus, memory_gb: What each cell asks for.
        max_retries: Runs again after the cell's worker process or node died.
        dashboard: Start the dashboard with a local instance.
        torch_threads: Torch threads in a cell; None: ``int(num_cpus)`` (at least 1).
    """

    def __init__(self, address: str | None = None, num_cpus: float = 1.0, num_gpus: float = 0.0, memory_gb: float | None = None,
                 max_retries: int = 2, dashboard: bool = False, torch_threads: int | None = None) -> None:
        self.address, self.dashboard, self.max_retries = address, dashboard, max_retries
        self.options = {"num_cpus": num_cpus, "num_gpus": num_gpus, "max_retries": max_retries, "retry_exceptions": False}
        if memory_gb is not None:
            self.options["memory"] = int(memory_gb * 2**30)
        self.torch_threads = torch_threads or max(1, int(num_cpus))

    def __call__(self, jobs: list[CellJob], run_cell: Callable, start_child_run: Callable | None) -> Iterator[tuple[int, dict[str, Any]]]:
        if not jobs:
            return
        ray = import_ray()
        started_here = connect(ray, self.address, self.dashboard)
        try:
            payload = ray.put((run_cell, start_child_run))
            task = ray.remote(_run_on_worker)
            running = {}
            for job in jobs:
                options = {**self.options, "name": f"cell {job.cell.name}"}
                running[task.options(**options).remote([payload], job, self.torch_threads)] = job
            logger.info("Ray: %d cells submitted (%s each)", len(jobs), _resources_text(self.options))
            while running:
                [done], _ = ray.wait(list(running), num_returns=1)
                job = running.pop(done)
                try:
                    record = ray.get(done)
                except Exception as error:  # the worker or node died more than max_retries times
                    record = self._lost_record(job, error)
                yield job.index, record
        finally:
            if started_here:
                ray.shutdown()

    def _lost_record(self, job: CellJob, error: Exception) -> dict[str, Any]:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        message = f"{type(error).__name__}: its worker or node died {self.max_retries + 1} time(s) (max_retries={self.max_retries}): {first_line}"
        logger.error("[%d/%d] %s failed: %s", job.index + 1, job.total, job.cell.name, message)
        return {**job.cell.__dict__, "cell": job.cell.name, "key": job.key, "run_id": None, "node": None, "ray_node_id": None,
                "status": "failed", "error": message, "seconds": None}


def connect(ray, address: str | None, dashboard: bool) -> bool:
    """Join the cluster at ``address`` or start a local instance; log the nodes and the
    dashboard's address (or that it is off). Returns whether this call started Ray (and the
    caller shuts it down)."""
    if ray.is_initialized():
        logger.info("Ray: using the instance this process already joined")
        return False
    if address is None:  # "local": a new instance, never a cluster `ray start` left running on this machine
        context = ray.init(address="local", include_dashboard=dashboard, log_to_driver=True)
    else:
        context = ray.init(address=address, log_to_driver=True)
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    cpus = sum(node.get("Resources", {}).get("CPU", 0) for node in nodes)
    gpus = sum(node.get("Resources", {}).get("GPU", 0) for node in nodes)
    where = f"the cluster at {address}" if address else "a local instance"
    logger.info("Ray: %s, %d node(s), %g CPU(s), %g GPU(s)", where, len(nodes), cpus, gpus)
    url = getattr(context, "dashboard_url", None)
    if url:
        logger.info("Ray dashboard: http://%s", url.removeprefix("http://"))
    else:
        logger.info("Ray dashboard: off (experiments.ray_dashboard: true starts it with a local instance; "
                    "a cluster's is the head's, `ray start --head --include-dashboard true`)")
    return True


def _resources_text(options: dict[str, Any]) -> str:
    parts = [f"{options['num_cpus']:g} CPU"]
    if options["num_gpus"]:
        parts.append(f"{options['num_gpus']:g} GPU")
    if "memory" in options:
        parts.append(f"{options['memory'] / 2**30:g} GiB")
    return ", ".join(parts) + f", up to {options['max_retries']} retries"


def _run_on_worker(payload_box: list, job: CellJob, torch_threads: int) -> dict[str, Any]:
    """A Ray task: one cell on this worker, its record naming the node. ``payload_box`` holds
    the grid's object ref in a list, so Ray leaves it unresolved and the worker unpacks it
    once for all the cells it runs."""
    import ray
    import torch

    [payload] = payload_box
    if payload.hex() not in _WORKER_PAYLOADS:
        _WORKER_PAYLOADS.clear()
        _WORKER_PAYLOADS[payload.hex()] = ray.get(payload)
    run_cell, start_child_run = _WORKER_PAYLOADS[payload.hex()]
    torch.set_num_threads(torch_threads)
    context = ray.get_runtime_context()
    node_id = context.get_node_id()
    ip = ray.util.get_node_ip_address()
    return run_cell_record(job, run_cell, start_child_run, {"node": f"{ip}/{node_id[:8]}", "ray_node_id": node_id})

"""Resource hooks: time every node with the run's peak memory (Python and the JVM
together), log both to MLflow and print the table at the end of a run, and hand freed
memory back to the system after each node."""

from __future__ import annotations

import logging
import threading
import time

from kedro.framework.hooks import hook_impl

logger = logging.getLogger(__name__)


def release_free_memory() -> None:
    """Collect garbage and hand the C heap's free pages back to the system (glibc
    ``malloc_trim``; elsewhere a no-op). Freed tensors of one stage otherwise stay in the
    process's resident memory while the next stage allocates its own."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class MemoryReleaseHooks:
    """Release free memory (``release_free_memory``) after every node that ran at least
    ``min_seconds``: the stages that train or play. A full garbage collection costs about
    half a second on the default run's heap, and the run has about 30 nodes, most of them
    quick reads and reshapes that free little (profiled: 16 s of the default run when
    every node released)."""

    min_seconds = 2.0

    def __init__(self) -> None:
        self._started: dict[str, float] = {}

    @hook_impl
    def before_node_run(self, node) -> None:
        self._started[node.name] = time.perf_counter()

    @hook_impl
    def after_node_run(self, node) -> None:
        started = self._started.pop(node.name, None)
        if started is None or time.perf_counter() - started >= self.min_seconds:
            release_free_memory()


class _TreeMemorySampler:
    """Samples the resident memory of this process and its children (the JVM) in a daemon
    thread; ``peak()`` is the largest total seen since the last ``reset()``."""

    def __init__(self, interval_s: float = 0.25) -> None:
        import psutil

        self._process = psutil.Process()
        self._interval_s = interval_s
        self._peak = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)
        self._thread.start()

    def current(self) -> int:
        import psutil

        total = 0
        for proc in [self._process, *self._process.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
            except psutil.Error:  # a child that just exited
                continue
        return total

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            rss = self.current()
            with self._lock:
                self._peak = max(self._peak, rss)

    def reset(self) -> None:
        with self._lock:
            self._peak = self.current()

    def peak(self) -> int:
        with self._lock:
            return max(self._peak, self.current())

    def stop(self) -> None:
        self._stop.set()


class NodeResourceHooks:
    """Time every node and measure the peak resident memory of the run (Python and the JVM
    together) while it ran; log both to MLflow (``node_seconds/<node>``,
    ``node_peak_rss_mb/<node>``, and the totals ``run_seconds`` and ``run_peak_rss_mb``) and
    print a table at the end of the run, so a slow or hungry stage is plain to see."""

    def __init__(self) -> None:
        self._sampler: _TreeMemorySampler | None = None
        self._started: dict[str, float] = {}
        self._rows: list[tuple[str, float, float]] = []
        self._run_started = 0.0

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        self._rows = []
        self._run_started = time.perf_counter()
        try:
            self._sampler = _TreeMemorySampler()
        except Exception:  # psutil unavailable: timing only
            self._sampler = None

    @hook_impl
    def before_node_run(self, node) -> None:
        if self._sampler is not None:
            self._sampler.reset()
        self._started[node.name] = time.perf_counter()

    @hook_impl
    def after_node_run(self, node) -> None:
        seconds = time.perf_counter() - self._started.pop(node.name, time.perf_counter())
        peak_mb = self._sampler.peak() / 2**20 if self._sampler is not None else float("nan")
        short = node.name.split("(")[0].strip()
        self._rows.append((short, seconds, peak_mb))
        from hindsight import tracking

        # the run totals so far: kedro-mlflow closes the MLflow run before after_pipeline_run
        # hooks of other plugins run, so the last node's values are the run's
        tracking.log_metrics(
            {
                f"node_seconds/{short}": seconds,
                f"node_peak_rss_mb/{short}": peak_mb,
                "run_seconds": time.perf_counter() - self._run_started,
                "run_peak_rss_mb": max(row[2] for row in self._rows),
            }
        )

    @hook_impl
    def after_pipeline_run(self, run_params, pipeline, catalog) -> None:
        if self._sampler is not None:
            self._sampler.stop()
        if not self._rows:
            return
        total = time.perf_counter() - self._run_started
        peak = max(row[2] for row in self._rows)
        logger.info("Node times and peak memory (Python + JVM), slowest first:")
        for name, seconds, peak_mb in sorted(self._rows, key=lambda row: -row[1]):
            if seconds >= 1.0:
                logger.info("  %-34s %7.1f s %7.0f MB", name[:34], seconds, peak_mb)
        logger.info("  %-34s %7.1f s %7.0f MB", "pipeline (all nodes)", total, peak)

    @hook_impl
    def on_pipeline_error(self, error, run_params, pipeline, catalog) -> None:
        if self._sampler is not None:
            self._sampler.stop()

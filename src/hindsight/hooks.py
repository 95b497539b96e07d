"""Project hooks: check the parameters and the machine's system needs before a run starts, seed everything,
record data versions, log every report (08_reporting) to the MLflow run, time every node
with the run's peak memory (Python and the JVM together), and hand freed memory back to the
system after each node.

The environments need a Java 17 runtime (TextWorldExpress and ScienceWorld run on the JVM);
a missing one is reported before any node runs, with how to install it, instead of as a
py4j traceback half-way through a run.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from pathlib import Path

from kedro.framework.hooks import hook_impl

logger = logging.getLogger(__name__)

JAVA_ENVIRONMENTS = {"textworldexpress", "scienceworld"}


def _environments_in_use(params: dict) -> set[str]:
    """Environment families named anywhere in the parameters (``env: <name>`` entries)."""
    found: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "env" and isinstance(item, str):
                    found.add(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(params)
    return found


class EnvironmentCheckHooks:
    """Fail fast, with a clear message, when a parameter key is unknown (a misspelt key in a
    parameters file or a ``--params`` override: ``hindsight.config.check_parameters`` names
    it and its file) or a system need of the run is missing."""

    @hook_impl
    def after_context_created(self, context) -> None:
        from hindsight.config import check_parameters

        check_parameters(context.params)
        os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        threads = os.environ.get("HINDSIGHT_TORCH_THREADS")
        if threads:  # e.g. 1 per run when several runs share a small machine
            import torch

            torch.set_num_threads(int(threads))
        if _environments_in_use(context.params) & JAVA_ENVIRONMENTS:
            from hindsight.envs.java import check_java

            check_java()


class SettingsHooks:
    """Provide the typed settings a partial run needs but does not build.

    Each stage's ``read_settings`` node builds its settings from the parameters. A run that
    starts mid-pipeline (``--from-nodes``, ``--nodes``) skips those nodes, and their
    in-memory outputs would be missing: they are built here from the same parameters.
    """

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        missing = {name for name in pipeline.inputs() if name.endswith("_settings")}
        if not missing:
            return
        from hindsight.config.files import settings_datasets

        for name, value in settings_datasets(catalog.load("parameters")).items():
            if name in missing:
                catalog[name] = value


class ReproducibilityHooks:
    """Seed Python, NumPy and torch from ``params:seed`` before the pipeline runs."""

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        try:
            seed = int(catalog.load("params:seed"))
        except Exception:  # no global seed parameter in this configuration
            return
        import numpy as np
        import torch

        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        logger.info("Seeded python, numpy and torch with %d", seed)


def _version_of(dataset, save: bool) -> str | None:
    """The version folder a versioned dataset last read (or wrote), None if unversioned."""
    if getattr(dataset, "_version", None) is None:
        return None
    try:
        path = Path(dataset._get_save_path() if save else dataset._get_load_path())
    except Exception:
        return None
    return path.parent.name


class DataVersionHooks:
    """Record the version of every versioned dataset a run loads or saves, as MLflow tags
    ``data_version.<dataset>``, so every number can be traced to the data behind it."""

    def __init__(self) -> None:
        self._catalog = None

    @hook_impl
    def after_catalog_created(self, catalog) -> None:
        self._catalog = catalog

    def _record(self, name: str, save: bool) -> None:
        if self._catalog is None or name.startswith("params:") or name == "parameters":
            return
        try:
            version = _version_of(self._catalog.get(name), save)
        except Exception:
            return
        if version:
            from hindsight import tracking

            tracking.record_data_version(name, version)

    @hook_impl
    def after_dataset_loaded(self, dataset_name: str, data, node) -> None:
        self._record(dataset_name, save=False)

    @hook_impl
    def after_dataset_saved(self, dataset_name: str, data, node) -> None:
        self._record(dataset_name, save=True)


class ReportArtifactHooks:
    """Log each saved report file (the ``08_reporting`` layer) to the active MLflow run.

    Reports are versioned Kedro datasets; wrapping a versioned dataset in kedro-mlflow's
    artifact dataset clashes on the save version, so the file is logged after it is saved.
    """

    def __init__(self) -> None:
        self._catalog = None

    @hook_impl
    def after_catalog_created(self, catalog) -> None:
        self._catalog = catalog

    @hook_impl
    def after_dataset_saved(self, dataset_name: str, data, node) -> None:
        if self._catalog is None:
            return
        dataset = self._catalog.get(dataset_name)
        describe = getattr(dataset, "_describe", lambda: {})()
        filepath = str(describe.get("filepath") or describe.get("path") or "")
        if "08_reporting" not in filepath:
            return
        try:
            path = Path(dataset._get_load_path())  # the version just written
        except Exception:  # unversioned
            path = Path(filepath)
        if path.is_file():
            from hindsight import tracking

            tracking.log_artifact(path, artifact_path="reports")


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
    """Release free memory after every node (``release_free_memory``)."""

    @hook_impl
    def after_node_run(self, node) -> None:
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

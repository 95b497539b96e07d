"""Project hooks: check the machine's system needs before a run starts, seed everything, and
log every report (08_reporting) to the MLflow run.

The environments need a Java 17 runtime (TextWorldExpress and ScienceWorld run on the JVM);
a missing one is reported before any node runs, with how to install it, instead of as a
py4j traceback half-way through a run.
"""

from __future__ import annotations

import logging
import os
import random
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
    """Fail fast, with a clear message, when a system need of the run is missing."""

    @hook_impl
    def after_context_created(self, context) -> None:
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

"""The datasets a run read and wrote, as the MLflow run's dataset inputs.

Every persisted catalog dataset the run loads or saves is logged once per run with
``mlflow.log_input``, under its Kedro name (a transcoded entry, ``world_model@optional``,
under ``world_model``), tagged ``mlflow.data.context`` = ``input`` (loaded, and not written
earlier in the same run) or ``output`` (saved). The MLflow UI's Dataset column then names
them, and a dataset version links the run that wrote it to the runs that read it: its digest
is the Kedro version (``2026-11-29T19.45.16.854Z``), so MLflow, which keeps one dataset per
name and digest in an experiment, holds each version once.

Nothing is loaded again and no table is copied or hashed: the hooks get the data Kedro just
loaded or saved. A table is logged with its row count and a schema inferred from its first
rows; any other object (a policy, a directory) with its location only. An unversioned file's
digest is its size and modification time. In-memory datasets and parameters are not logged.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from pathlib import Path
from typing import Any

from kedro.framework.hooks import hook_impl

logger = logging.getLogger(__name__)

SCHEMA_ROWS = 100
"""Rows a table's schema is inferred from (MLflow's own inference reads every row)."""


def dataset_location(dataset, save: bool) -> tuple[Path, str | None] | None:
    """Where a catalog dataset's data lies (the version just read or written) and its Kedro
    version; None for a dataset without a file or directory (in memory, credentials)."""
    try:
        described = dataset._describe()
    except Exception:
        return None
    base = described.get("filepath") or described.get("path")
    if not base:
        return None
    version = None
    location = Path(str(base))
    if getattr(dataset, "_version", None) is not None:
        try:  # after a save, _get_save_path refuses the version it just wrote
            location = Path(dataset._get_versioned_path(dataset.resolve_save_version()) if save else dataset._get_load_path())
        except Exception:
            return None
        version = location.parent.name
    return location.absolute(), version


def _digest(location: Path, version: str | None) -> str:
    """The Kedro version; for an unversioned file, a hash of its size and modification time."""
    if version:
        return version
    try:
        stat = location.stat()
        stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
    except OSError:
        stamp = "missing"
    return hashlib.sha1(f"{location}:{stamp}".encode()).hexdigest()[:12]


def _source(location: Path):
    from mlflow.data.dataset_source_registry import resolve_dataset_source

    with warnings.catch_warnings():  # a local path matches MLflow's two local sources alike
        warnings.simplefilter("ignore")
        return resolve_dataset_source(str(location))


def _table_schema(df):
    """The schema of ``df`` inferred from its first ``SCHEMA_ROWS`` rows (None if MLflow
    cannot infer one)."""
    try:
        from mlflow.models import infer_signature

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return infer_signature(df.head(SCHEMA_ROWS)).inputs
    except Exception:
        return None


def mlflow_dataset(name: str, data: Any, location: Path, version: str | None):
    """An MLflow dataset entity for one Kedro dataset: a ``PandasDataset`` for a table (its
    schema from its first rows, no digest computed), a ``MetaDataset`` otherwise."""
    import pandas as pd
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.data.pandas_dataset import PandasDataset

    digest, source = _digest(location, version), _source(location)
    if isinstance(data, pd.DataFrame):
        table = PandasDataset(df=data, source=source, name=name, digest=digest)
        table.__dict__["schema"] = _table_schema(data)  # fills MLflow's cached schema: no full scan
        return table
    return MetaDataset(source=source, name=name, digest=digest)


class DatasetLineageHooks:
    """Log each persisted dataset a run loads or saves as a dataset input of its MLflow run
    (``mlflow.data.context`` = ``input`` / ``output``), once per name and version."""

    def __init__(self) -> None:
        self._catalog = None
        self._logged: set[tuple[str, str]] = set()
        self._written: set[str] = set()

    @hook_impl
    def after_catalog_created(self, catalog) -> None:
        self._catalog = catalog

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        self._catalog = catalog
        self._logged, self._written = set(), set()

    @hook_impl
    def after_dataset_loaded(self, dataset_name: str, data, node) -> None:
        self._log(dataset_name, data, save=False)

    @hook_impl
    def after_dataset_saved(self, dataset_name: str, data, node) -> None:
        self._log(dataset_name, data, save=True)

    def _log(self, dataset_name: str, data: Any, save: bool) -> None:
        if self._catalog is None or data is None or dataset_name == "parameters" or dataset_name.startswith("params:"):
            return
        import mlflow

        if mlflow.active_run() is None:
            return
        name = dataset_name.split("@")[0]
        if not save and name in self._written:  # read back after this run wrote it: an output already
            return
        try:
            found = dataset_location(self._catalog.get(dataset_name), save)
            if found is None:
                return
            location, version = found
            entity = mlflow_dataset(name, data, location, version)
            if (name, entity.digest) in self._logged:
                return
            mlflow.log_input(entity, context="output" if save else "input", tags={"kedro.dataset": dataset_name})
            self._logged.add((name, entity.digest))
            if save:
                self._written.add(name)
        except Exception as error:  # noqa: BLE001 - lineage must not fail a run
            logger.warning("Could not log dataset %s as an MLflow run input (%s: %s)", dataset_name, type(error).__name__, error)

"""Kedro sessions on isolated copies of the project (helpers of the pipeline tests).

A ``KedroProject`` is a temporary directory holding a copy of ``conf/base``, ``conf/test``
and ``pyproject.toml`` (the MLflow database path made absolute, see
``KedroProject._pin_tracking_database``), empty data layers and an empty ``src/`` (the
package itself is the installed one). ``KedroProject.run`` starts a fresh ``KedroSession`` there (one session runs
once) with ``env="test"``, and reports what the run wrote: the new version of every
versioned dataset and its MLflow run, read back from the project's own ``mlflow.db``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DATA_LAYERS = (
    "01_raw", "02_intermediate", "03_primary", "04_feature",
    "05_model_input", "06_models", "07_model_output", "08_reporting",
)
VERSION_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}\.\d{3}Z$")
"""Kedro's version folder names, e.g. 2026-11-29T19.45.16.854Z."""


@dataclass
class RunRecord:
    """What one ``kedro run`` wrote."""

    outputs: dict[str, Path] = field(default_factory=dict)
    """``"<layer>/<dataset file or folder name>"`` -> the file or folder of the version written."""
    mlflow_run: Any = None
    """The ``mlflow.entities.Run`` the session logged to."""
    run_left_active: str | None = None
    """The id of an MLflow run still active in this process after the session, if any."""


@functools.cache
def empty_tracking_database() -> Path:
    """An MLflow SQLite database with every table created and migrated and no run, made once
    per process in a temporary folder: each project starts from a copy of it (about 30 ms)
    instead of MLflow creating the schema afresh (about a second, over a thousand commits)."""
    import mlflow

    path = Path(tempfile.mkdtemp(prefix="mlflow_schema_")) / "mlflow.db"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


class KedroProject:
    """An isolated copy of the project in a temporary directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last_record: RunRecord | None = None
        """What the latest ``run`` wrote, also when it raised."""
        for part in ("base", "test"):
            shutil.copytree(PROJECT_ROOT / "conf" / part, path / "conf" / part)
        (path / "conf" / "local").mkdir()
        self._pin_tracking_database()
        shutil.copy(empty_tracking_database(), path / "mlflow.db")
        shutil.copy(PROJECT_ROOT / "pyproject.toml", path / "pyproject.toml")
        (path / "src").mkdir()
        for layer in DATA_LAYERS:
            (path / "data" / layer).mkdir(parents=True)

    @classmethod
    def copy_of(cls, source: "KedroProject | Path", path: Path) -> "KedroProject":
        """A new project at ``path`` whose ``data/`` is a copy of ``source``'s (a project or
        its folder; every version of every dataset; conf/test and conf/base copied afresh),
        with an MLflow database of its own: a test runs one later stage on a trained project
        without training the earlier stages again, and without touching ``source``."""
        project = cls(path)
        shutil.rmtree(path / "data")
        shutil.copytree(getattr(source, "path", source) / "data", path / "data", symlinks=True)
        return project

    def _pin_tracking_database(self) -> None:
        """Make the copy's relative ``sqlite:///mlflow.db`` absolute (the same file).

        MLflow keeps one store per tracking-URI string for the life of the process, opened
        relative to the directory current at first use: with the relative URI, every later
        project in this process would log into the first project's database.
        """
        mlflow_yml = self.path / "conf" / "base" / "mlflow.yml"
        text = mlflow_yml.read_text()
        assert "sqlite:///mlflow.db" in text, "conf/base/mlflow.yml no longer tracks to sqlite:///mlflow.db"
        mlflow_yml.write_text(text.replace("sqlite:///mlflow.db", f"sqlite:///{self.path / 'mlflow.db'}"))

    def versions(self, dataset: str) -> list[str]:
        """Version folders of a versioned dataset (``"<layer>/<name>"``), oldest first; a
        folder counts only if it holds the dataset (a failed save may leave it empty)."""
        root = self.path / "data" / dataset
        if not root.is_dir():
            return []
        name = Path(dataset).name
        return sorted(p.name for p in root.iterdir() if VERSION_PATTERN.match(p.name) and (p / name).exists())

    def _all_versions(self) -> set[tuple[str, str]]:
        found = set()
        for layer in DATA_LAYERS:
            for dataset in (self.path / "data" / layer).iterdir():
                found |= {(f"{layer}/{dataset.name}", version) for version in self.versions(f"{layer}/{dataset.name}")}
        return found

    def mlflow_client(self):
        """A client on this project's ``mlflow.db``."""
        import mlflow

        return mlflow.MlflowClient(tracking_uri=f"sqlite:///{self.path / 'mlflow.db'}")

    def mlflow_runs(self) -> list:
        """Every MLflow run of the project, oldest first."""
        if not (self.path / "mlflow.db").exists():
            return []
        client = self.mlflow_client()
        experiments = [e.experiment_id for e in client.search_experiments()]
        return sorted(client.search_runs(experiments), key=lambda run: run.info.start_time)

    def run(
        self, pipeline_names: list[str] | None = None, runtime_params: dict | None = None, **run_options
    ) -> RunRecord:
        """One ``kedro run --env test`` in this project; exceptions of the run propagate.

        Args:
            pipeline_names: Pipelines to run (None: ``__default__``).
            runtime_params: Nested parameter overrides, merged into the parameters like
                ``kedro run --params a.b=c`` (which Kedro turns into ``{"a": {"b": "c"}}``).
            run_options: Passed to ``KedroSession.run`` (e.g. ``from_nodes=[...]``).
        """
        from kedro.framework.session import KedroSession
        from kedro.framework.startup import bootstrap_project

        before_versions = self._all_versions()
        before_runs = {run.info.run_id for run in self.mlflow_runs()}
        saved_path = list(sys.path)
        try:
            with contextlib.chdir(self.path):
                bootstrap_project(self.path)
                with KedroSession.create(project_path=self.path, env="test", runtime_params=runtime_params) as session:
                    session.run(pipeline_names=pipeline_names, **run_options)
        finally:
            sys.path[:] = saved_path
            left_active = close_active_mlflow_runs()
            record = RunRecord(
                outputs={
                    dataset: self.path / "data" / dataset / version / Path(dataset).name
                    for dataset, version in sorted(self._all_versions() - before_versions)
                },
            )
            new_runs = [run for run in self.mlflow_runs() if run.info.run_id not in before_runs]
            record.mlflow_run = new_runs[-1] if new_runs else None
            record.run_left_active = left_active
            self.last_record = record
        return record


def close_active_mlflow_runs() -> str | None:
    """End every MLflow run still active in this process; return the id of the one that was
    active, if any.

    With ``tracking.run.nested: True`` in ``conf/base/mlflow.yml``, kedro-mlflow 2.0.3
    re-enters its run before every node (``start_run(run_id=..., nested=True)`` pushes the
    same run again) and ends it once after the pipeline, so the run stays active in the
    process and the next session in the same process would log into it. Each session here
    must start clean, whatever the configuration.
    """
    import mlflow

    active = mlflow.active_run()
    left = active.info.run_id if active else None
    while mlflow.active_run() is not None:
        mlflow.end_run()
    return left

"""MLflow logging that library code can call whether or not a run is active.

Under ``kedro run`` kedro-mlflow opens an MLflow run around the pipeline; nodes log their
metrics into it through these functions. Outside a run (a unit test, a notebook) they do
nothing, so the library never depends on a tracking server.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Mapping

logger = logging.getLogger(__name__)

_DATA_VERSIONS: dict[str, str] = {}


def record_data_version(dataset: str, version: str) -> None:
    """Remember (and tag on the active MLflow run) which version of a dataset this run used."""
    _DATA_VERSIONS[dataset] = version
    set_tags({f"data_version.{dataset}": version})


def data_versions() -> dict[str, str]:
    """Versions of the versioned datasets this process loaded or saved, by dataset name."""
    return dict(_DATA_VERSIONS)


def _active_run():
    try:
        import mlflow
    except ImportError:  # pragma: no cover - mlflow is a core dependency
        return None
    return mlflow.active_run()


def log_metrics(metrics: Mapping[str, float], step: int | None = None) -> None:
    """Log finite numeric metrics to the active MLflow run, if any."""
    if _active_run() is None:
        return
    import mlflow

    clean = {
        key.replace(" ", "_"): float(value)
        for key, value in metrics.items()
        if isinstance(value, (int, float)) and math.isfinite(float(value))
    }
    if clean:
        mlflow.log_metrics(clean, step=step)


def log_artifact(path: str | Path, artifact_path: str | None = None) -> None:
    """Log a file to the active MLflow run, if any."""
    if _active_run() is None:
        return
    import mlflow

    mlflow.log_artifact(str(path), artifact_path=artifact_path)


def set_tags(tags: Mapping[str, str]) -> None:
    """Set tags on the active MLflow run, if any."""
    if _active_run() is None:
        return
    import mlflow

    mlflow.set_tags({key: str(value) for key, value in tags.items()})

"""MLflow logging that library code can call whether or not a run is active.

Under ``kedro run`` kedro-mlflow opens an MLflow run around the pipeline; nodes log their
metrics into it through these functions. Outside a run (a unit test, a notebook) they do
nothing, so the library never depends on a tracking server.
"""

from __future__ import annotations

import json
import logging
import math
import os
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


KILLED_TAG = "hindsight.killed"
"""Tag on a run marked KILLED by ``end_dead_run``: why it was (the run that took over)."""
TAKEN_OVER_TAG = "hindsight.takes_over"
"""Tag on the run that took over a dead one: the dead run's id."""


def active_run_id() -> str | None:
    """The active MLflow run's id, None outside a run."""
    run = _active_run()
    return run.info.run_id if run is not None else None


def end_dead_run(run_id: str | None, why: str) -> bool:
    """Mark a run KILLED that MLflow still shows RUNNING although its process is gone (a
    SIGKILL, a lost machine: nothing ran its end), when the active run takes over its work
    (a resumed training run, a grid cell run again).

    The dead run keeps its metrics and artifacts; it gets the tag ``hindsight.killed`` (``why``
    and the active run's id), the active run ``hindsight.takes_over`` (the dead run's id).
    Nothing happens outside an active run, for the active run itself, or for a run that is
    not RUNNING (one that ended, failed or was marked already).

    Returns:
        Whether the run was marked.
    """
    current = active_run_id()
    if run_id is None or current is None or run_id == current:
        return False
    import mlflow

    try:
        client = mlflow.MlflowClient()
        if client.get_run(run_id).info.status != "RUNNING":
            return False
        client.set_tag(run_id, KILLED_TAG, f"{why}; taken over by run {current}")
        client.set_terminated(run_id, status="KILLED")
        client.set_tag(current, TAKEN_OVER_TAG, run_id)
    except Exception as error:  # noqa: BLE001 - a stale record is not worth a failed run
        logger.warning("Could not mark the interrupted MLflow run %s KILLED (%s: %s)", run_id, type(error).__name__, error)
        return False
    logger.info("Marked the interrupted MLflow run %s KILLED (%s).", run_id, why)
    return True


def end_dead_runs_tagged(tag: str, value: str, why: str) -> list[str]:
    """``end_dead_run`` on every RUNNING run of the active run's experiment tagged
    ``tag = value`` (but the active run): e.g. the earlier child runs of a grid cell that is
    run again, whose worker died. Returns the ids marked."""
    run = _active_run()
    if run is None:
        return []
    import mlflow

    try:
        found = mlflow.MlflowClient().search_runs(
            [run.info.experiment_id], filter_string=f"tags.`{tag}` = '{value}' and attributes.status = 'RUNNING'"
        )
    except Exception as error:  # noqa: BLE001 - as in end_dead_run
        logger.warning("Could not look for interrupted MLflow runs (%s: %s)", type(error).__name__, error)
        return []
    return [found_run.info.run_id for found_run in found if end_dead_run(found_run.info.run_id, why)]


RUN_MARKER = "mlflow_run.json"
"""File in a checkpoint directory naming the MLflow run that trains into it
(``take_over_checkpoints``)."""


def take_over_checkpoints(checkpoint_dir: str | Path) -> str | None:
    """Record the active run as the one training into ``checkpoint_dir`` (``RUN_MARKER``);
    the run recorded there before, still RUNNING because its process was killed (nothing
    ended it), is marked KILLED (``end_dead_run``), and the resumed training goes on in the
    active run. Call it before training starts or resumes. Nothing happens outside a run.

    Returns:
        The id of the run marked KILLED, None when none was.
    """
    current = active_run_id()
    if current is None:
        return None
    directory = Path(checkpoint_dir)
    marker = directory / RUN_MARKER
    try:
        earlier = json.loads(marker.read_text()).get("run_id") if marker.is_file() else None
    except (OSError, ValueError):  # a marker cut short by the kill: no run to end
        earlier = None
    ended = earlier if end_dead_run(earlier, f"interrupted; its checkpoints ({directory.name}) resumed") else None
    directory.mkdir(parents=True, exist_ok=True)
    partial = marker.with_name(f"{marker.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps({"run_id": current}))
    partial.replace(marker)
    return ended

"""A SIGKILLed run leaves its MLflow record RUNNING (nothing ran its end); the run that takes
its work over marks it KILLED, tagged both ways: a training run resumed from the dead run's
checkpoints (``tracking.take_over_checkpoints``), and a grid cell run again after its worker
died (``tracking.end_dead_runs_tagged`` in the cell's child run). MLflow's SQLite backend in
a temporary folder; the dead training run is a real process killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import mlflow
import pytest

from hindsight import tracking
from hindsight.experiments.grid import Cell, run_grid
from hindsight.pipelines.experiments.nodes import _child_run
from hindsight.training.checkpoint import latest_checkpoint

DEAD_TRAINING_RUN = textwrap.dedent(
    """
    import os, signal, sys
    import mlflow
    from hindsight import tracking

    uri, checkpoints = sys.argv[1], sys.argv[2]
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("training")
    run = mlflow.start_run()
    tracking.take_over_checkpoints(checkpoints)
    os.makedirs(os.path.join(checkpoints, "update_000001", "policy"))  # its first checkpoint (its
    open(os.path.join(checkpoints, "update_000001", "state.pt"), "wb").close()  # files' contents aside)
    print(run.info.run_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # killed mid-training: the run is never ended
    """
)


@pytest.fixture()
def sqlite_tracking(tmp_path):
    previous = mlflow.get_tracking_uri()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    yield uri
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(previous)


def test_a_resumed_training_run_marks_the_killed_run_killed(sqlite_tracking, tmp_path):
    checkpoints = tmp_path / "checkpoints" / "0123abcd"
    killed = subprocess.run(
        [sys.executable, "-c", DEAD_TRAINING_RUN, sqlite_tracking, str(checkpoints)],
        capture_output=True, text=True, timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    dead = killed.stdout.strip()
    client = mlflow.MlflowClient()
    assert client.get_run(dead).info.status == "RUNNING"  # what a SIGKILL leaves
    assert latest_checkpoint(checkpoints).name == "update_000001"

    mlflow.set_experiment("training")
    with mlflow.start_run() as resumed:
        assert tracking.take_over_checkpoints(checkpoints) == dead
        assert tracking.take_over_checkpoints(checkpoints) is None  # the marker names this run now
    old = client.get_run(dead)
    assert old.info.status == "KILLED" and old.info.end_time is not None
    assert resumed.info.run_id in old.data.tags[tracking.KILLED_TAG]
    assert "0123abcd" in old.data.tags[tracking.KILLED_TAG]
    new = client.get_run(resumed.info.run_id)
    assert new.info.status == "FINISHED" and new.data.tags[tracking.TAKEN_OVER_TAG] == dead
    assert latest_checkpoint(checkpoints).name == "update_000001"  # the marker is no checkpoint


def test_a_run_that_ended_is_left_as_it_is(sqlite_tracking, tmp_path):
    mlflow.set_experiment("training")
    with mlflow.start_run() as first:
        tracking.take_over_checkpoints(tmp_path)
    mlflow.MlflowClient().set_terminated(first.info.run_id, status="FAILED")  # kedro-mlflow on an exception
    with mlflow.start_run():
        assert tracking.take_over_checkpoints(tmp_path) is None
    assert mlflow.MlflowClient().get_run(first.info.run_id).info.status == "FAILED"


def test_a_grid_cell_whose_worker_died_shows_killed_and_retried(sqlite_tracking, tmp_path):
    """The worker ran the cell in a child run and was SIGKILLed: its child run is RUNNING and
    no record of the cell was written. Running the grid again runs the cell and marks the dead
    child run KILLED, pointing at the new one."""
    cell, key = Cell(method="grpo", seed=0, fraction=1.0), "cellkey0123456789"
    experiment = mlflow.set_experiment("grid")
    client = mlflow.MlflowClient()
    with mlflow.start_run() as parent:
        dead = client.create_run(
            experiment.experiment_id, tags={"cell_key": key, "mlflow.parentRunId": parent.info.run_id}
        ).info.run_id  # the dead worker's child run, never ended
        other = client.create_run(experiment.experiment_id, tags={"cell_key": "another cell"}).info.run_id
        [record] = run_grid([cell], lambda c: {"ok": 1}, key_of=lambda c: key, cache_dir=tmp_path, start_child_run=_child_run)
    assert record["status"] == "finished" and record["run_id"] not in (None, dead)
    old = client.get_run(dead)
    assert old.info.status == "KILLED" and "grid worker died" in old.data.tags[tracking.KILLED_TAG]
    assert record["run_id"] in old.data.tags[tracking.KILLED_TAG]
    new = client.get_run(record["run_id"])
    assert new.info.status == "FINISHED" and new.data.tags[tracking.TAKEN_OVER_TAG] == dead
    assert client.get_run(other).info.status == "RUNNING"  # another cell's run is not touched
    statuses = {run.info.run_id: run.info.status for run in client.search_runs([experiment.experiment_id], filter_string=f"tags.cell_key = '{key}'")}
    assert "RUNNING" not in statuses.values() and len(statuses) == 2

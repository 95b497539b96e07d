"""A first ``kedro run`` in a fresh clone leaves the clone as it was, and the run's commit tag
is the clone's commit, not ``-dirty``.

kedro-telemetry (a dependency of kedro and kedro-viz) counts as consent anything short of a
refusal and appends a ``[tool.kedro_telemetry]`` block to the tracked ``pyproject.toml``;
the committed ``.telemetry`` file (``consent: false``) refuses. The run here has neither
``KEDRO_DISABLE_TELEMETRY`` nor ``DO_NOT_TRACK`` in its environment, as on a user's machine.
Before ``.telemetry`` is committed, the working copy's file is copied into the clone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]

ROOT = Path(__file__).resolve().parents[1]
RUN = ["run", "--env", "test", "--pipeline", "ingestion", "--params", "ingestion.expert_episodes.train=1"]
"""A short real run (one expert episode per game: about 10 s of nodes)."""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def test_a_first_run_in_a_fresh_clone_leaves_it_clean(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    if not (clone / ".telemetry").exists():  # not committed yet: the working copy's
        shutil.copy(ROOT / ".telemetry", clone / ".telemetry")
    pyproject = (clone / "pyproject.toml").read_text()
    head = _git("rev-parse", "HEAD", cwd=clone).strip()
    assert _git("status", "--porcelain", cwd=clone) == ""

    env = {key: value for key, value in os.environ.items() if key not in ("KEDRO_DISABLE_TELEMETRY", "DO_NOT_TRACK")}
    env["HINDSIGHT_TORCH_THREADS"] = "1"
    kedro = Path(sys.executable).with_name("kedro")
    result = subprocess.run([str(kedro), *RUN], cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]

    assert _git("status", "--porcelain", cwd=clone) == ""
    assert (clone / "pyproject.toml").read_text() == pyproject
    assert "sending anonymous usage data" not in result.stdout + result.stderr

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{clone / 'mlflow.db'}")
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert run.info.status == "FINISHED"
    assert run.data.tags["git.commit"] == head  # no "-dirty": the run changed nothing tracked

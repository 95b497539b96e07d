"""``kedro run --params`` with a misspelt key stops before any node runs, naming the key
and the file, and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline


def test_kedro_run_with_a_misspelt_params_key_fails_naming_key_and_file(tmp_path):
    project = KedroProject(tmp_path)
    kedro = Path(sys.executable).with_name("kedro")
    result = subprocess.run(
        [str(kedro), "run", "--env", "test", "--pipeline", "ingestion", "--params", "training.rl.updatez=3"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"},
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "'training.rl.updatez'" in output
    assert "parameters_training.yml" in output
    assert project.versions("03_primary/trajectories.parquet") == []  # nothing ran, nothing written

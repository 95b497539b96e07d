"""A teacher API key given through credentials never reaches MLflow (params, tags,
metrics, artifacts), the datasets or the run's log, even when the endpoint fails."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

SECRET = "sk-hindsight-test-7f3a9c"


def _files_holding(root: Path, text: bytes) -> list[str]:
    """Files under ``root`` (if it exists) whose bytes contain ``text``."""
    return [str(path) for path in root.rglob("*") if path.is_file() and text in path.read_bytes()] if root.exists() else []


def test_the_teacher_api_key_stays_out_of_mlflow_data_and_logs(trained_project, tmp_path, caplog, capsys):
    project = KedroProject.copy_of(trained_project[0], tmp_path)  # its base policy; the skills stage runs here
    (tmp_path / "conf" / "test" / "credentials.yml").write_text(f"teacher_api:\n  api_key: {SECRET}\n")
    (tmp_path / "conf" / "test" / "catalog.yml").write_text(
        "teacher_credentials:\n  type: hindsight.datasets.CredentialsDataset\n  credentials: teacher_api\n"
    )
    endpoint = {"base_url": "http://127.0.0.1:9/v1", "max_retries": 0, "backoff_s": 0.0, "timeout_s": 2.0}
    # every logger at DEBUG but py4j's (the JVM bridge of the environments logs each of its
    # calls, thousands per run; the key never reaches the JVM)
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.INFO, logger="py4j"):
        record = project.run(
            pipeline_names=["skills"],
            # one task per game, no validation re-rollouts: the key's path is the teacher's calls
            runtime_params={
                "skills": {"teacher": "openai", "openai": endpoint, "tasks_per_game": 1, "validation": {"enabled": False}}
            },
        )
    assert record.mlflow_run is not None and record.mlflow_run.info.status == "FINISHED"
    assert record.mlflow_run.data.params["skills.teacher"] == "openai"  # the run did use the endpoint teacher
    output = capsys.readouterr()
    assert SECRET not in caplog.text and SECRET not in output.out and SECRET not in output.err
    secret = SECRET.encode()
    assert (tmp_path / "mlflow.db").exists() and secret not in (tmp_path / "mlflow.db").read_bytes()
    for folder in ("data", "mlruns", "mlartifacts"):  # datasets and MLflow artifacts
        assert _files_holding(tmp_path / folder, secret) == [], folder

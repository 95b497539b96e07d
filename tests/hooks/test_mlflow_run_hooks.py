"""``hooks.mlflow_run``: the experiment tagged as a training one (also when it existed before),
the run named ``<pipeline> · <env> · <time>`` unless ``mlflow.yml`` names it, and MLflow's
system metrics turned on for a run and off after it, as ``tracking.yml`` says."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

import mlflow
import pytest
from mlflow.environment_variables import MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING, MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL

from hindsight.hooks import SystemMetricsHooks, TrainingRunHooks
from hindsight.hooks.mlflow_run import EXPERIMENT_KIND, run_name, tracking_settings

NOW = datetime(2026, 12, 4, 5, 40)


@pytest.fixture()
def experiment(tmp_path):
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        yield mlflow.create_experiment("old", artifact_location=(tmp_path / "artifacts").as_uri())  # no kind tag
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        mlflow.set_tracking_uri(previous)


def test_the_name_says_pipeline_env_and_time(tmp_path):
    (tmp_path / "conf" / "local").mkdir(parents=True)
    assert run_name(["__default__"], None, tmp_path, NOW) == "default · base · 2026-12-04 05:40"
    assert run_name(["ingestion", "empo"], "test", tmp_path, NOW) == "ingestion+empo · test · 2026-12-04 05:40"
    (tmp_path / "conf" / "local" / "parameters.yml").write_text("seed: 1\n")
    assert run_name(None, None, tmp_path, NOW) == "default · local · 2026-12-04 05:40"  # local overrides are read


def _context(tmp_path, tracking=None):
    return SimpleNamespace(project_path=tmp_path, config_loader={"tracking": tracking or {}})


def test_a_default_named_run_is_renamed_and_its_experiment_tagged(experiment, tmp_path):
    hooks = TrainingRunHooks()
    hooks.after_context_created(_context(tmp_path))
    with mlflow.start_run(experiment_id=experiment, run_name="__default__") as run:
        hooks.before_pipeline_run({"pipeline_names": ["__default__"], "env": "test"}, None, None)
    client = mlflow.MlflowClient()
    name = client.get_run(run.info.run_id).info.run_name
    assert name.startswith("default · test · ") and name != "__default__"
    assert client.get_experiment(experiment).tags["mlflow.experimentKind"] == EXPERIMENT_KIND
    with mlflow.start_run(experiment_id=experiment, run_name="my sweep") as run:  # a name set in mlflow.yml
        hooks.before_pipeline_run({"pipeline_names": ["__default__"], "env": None}, None, None)
    assert client.get_run(run.info.run_id).info.run_name == "my sweep"


def test_system_metrics_follow_the_settings(tmp_path):
    hooks = SystemMetricsHooks()
    hooks.after_context_created(_context(tmp_path, {"system_metrics_interval_s": 2}))
    hooks.before_pipeline_run({}, None, None)
    try:
        assert MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING.get() is True
        assert MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL.get() == 2
    finally:
        hooks.after_pipeline_run({}, None, None)
    assert MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING.get() is False
    off = SystemMetricsHooks()
    off.after_context_created(_context(tmp_path, {"system_metrics": False}))
    off.before_pipeline_run({}, None, None)
    assert MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING.get() is False


def test_an_unknown_tracking_key_is_named():
    with pytest.raises(ValueError, match=r"'system_metric'.*tracking.yml"):
        tracking_settings({"system_metric": True})
    assert tracking_settings(None).system_metrics is True

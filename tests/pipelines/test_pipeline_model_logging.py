"""The training pipeline logs its trained policy as an MLflow model of the run (the default
pipeline run of ``trained_project``, conf/test): the model's source run is the run, the
run's final metrics are linked to it, and it loads back with the weights of the
``rl_policy`` dataset version the run wrote."""

from __future__ import annotations

import mlflow
import pytest
import torch

from hindsight.hooks.model_logging import load_logged_policy
from hindsight.policy.model import load_policy

pytestmark = pytest.mark.pipeline



def test_the_run_logs_the_trained_policy_as_its_model(trained_project):
    project, record = trained_project
    run = record.mlflow_run
    client = project.mlflow_client()
    model_id = run.data.tags["logged_model.rl_policy"]
    model = client.get_logged_model(model_id)
    assert model.source_run_id == run.info.run_id
    assert model.name == "rl_policy"
    updates = int(run.data.params["training.rl.updates"])
    linked = {metric.key for metric in model.metrics if metric.step == updates}
    assert "rollout/success_rate" in linked and "losses/total" in linked  # the final update's metrics

    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{project.path / 'mlflow.db'}")
    try:
        logged = load_logged_policy(f"models:/{model_id}")
    finally:
        mlflow.set_tracking_uri(previous)
    saved = load_policy(record.outputs["06_models/rl_policy"], device="cpu")
    assert logged.version == saved.version == updates
    expected, loaded = saved.model.state_dict(), logged.model.state_dict()
    assert expected.keys() == loaded.keys()
    for name, tensor in expected.items():
        assert torch.equal(tensor, loaded[name]), name

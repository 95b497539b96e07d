"""``hindsight.hooks.model_logging``: a policy logged as an MLflow model of the active run, its
final metrics linked to it, read back with the same weights and tokenizer; any other saved
checkpoint logged as an external model of the run pointing at its versioned directory (no
weights copied); nothing logged outside a run; a failure reported (warning and tag), never
raised by the hook.

The whole pipeline's version (the test-config training run) is
``tests/pipelines/test_pipeline_model_logging.py``.
"""

from __future__ import annotations

import mlflow
import pytest
import torch

from kedro.io import DataCatalog, MemoryDataset, Version

from hindsight.datasets import ModelDirectoryDataset
from hindsight.hooks import ModelLoggingHooks
from hindsight.hooks.model_logging import CHECKPOINT_MODEL_TYPE, load_logged_policy, log_policy_model


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """An experiment in a temporary SQLite store (artifacts in the same directory)."""
    root = tmp_path_factory.mktemp("model_logging")
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    try:
        yield mlflow.create_experiment("model_logging", artifact_location=(root / "artifacts").as_uri())
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        mlflow.set_tracking_uri(previous)


def test_the_logged_policy_belongs_to_its_run_and_loads_back(experiment, tiny_policy):
    with mlflow.start_run(experiment_id=experiment) as run:
        mlflow.log_metrics({"rollout/success_rate": 0.25, "losses/total": 1.5}, step=1)
        mlflow.log_metrics({"rollout/success_rate": 0.5, "losses/total": 0.75}, step=2)
        logged = log_policy_model(tiny_policy, "rl_policy", step=2)
    assert logged.run_id == run.info.run_id
    client = mlflow.MlflowClient()
    model = client.get_logged_model(logged.model_id)
    assert model.source_run_id == run.info.run_id and model.name == "rl_policy"
    assert logged.model_id in [output.model_id for output in client.get_run(run.info.run_id).outputs.model_outputs]
    assert sorted((m.key, m.step, m.value) for m in model.metrics) == [("losses/total", 2, 0.75), ("rollout/success_rate", 2, 0.5)]

    back = load_logged_policy(logged.model_uri)
    assert back.version == 2
    expected, loaded = tiny_policy.model.state_dict(), back.model.state_dict()
    assert expected.keys() == loaded.keys()
    for name, tensor in expected.items():
        assert torch.equal(tensor, loaded[name]), name
    assert type(back.tokenizer) is type(tiny_policy.tokenizer)
    text = "> take apple\nYou take the apple."
    assert back.tokenizer(text)["input_ids"] == tiny_policy.tokenizer(text)["input_ids"]


def test_outside_a_run_nothing_is_logged(tiny_policy):
    assert mlflow.active_run() is None
    assert log_policy_model(tiny_policy, "rl_policy", step=1) is None


def test_the_hook_reports_a_failure_instead_of_raising(experiment, caplog):
    with mlflow.start_run(experiment_id=experiment) as run:
        ModelLoggingHooks().after_dataset_saved("rl_policy", object(), node=None)  # not a policy
        ModelLoggingHooks().after_dataset_saved("base_policy", object(), node=None)  # no catalog: not known as a checkpoint
    tags = mlflow.MlflowClient().get_run(run.info.run_id).data.tags
    assert tags["logged_model.rl_policy"].startswith("failed: AttributeError")
    assert "logged_model.base_policy" not in tags
    assert "Could not log rl_policy as an MLflow model" in caplog.text


def test_every_other_checkpoint_is_an_external_model_pointing_at_its_version(experiment, tiny_policy, tmp_path):
    version = "2026-01-02T03.04.05.678Z"
    catalog = DataCatalog({
        "base_policy": ModelDirectoryDataset(path=str(tmp_path / "base_policy"), version=Version(None, version)),
        "scratch": MemoryDataset(),
    })
    hooks = ModelLoggingHooks()
    hooks.after_catalog_created(catalog)
    with mlflow.start_run(experiment_id=experiment) as run:
        catalog.save("base_policy", tiny_policy)
        hooks.after_dataset_saved("base_policy", tiny_policy, node=None)
        hooks.after_dataset_saved("scratch", tiny_policy, node=None)  # not a checkpoint: nothing logged
    client = mlflow.MlflowClient()
    tags = client.get_run(run.info.run_id).data.tags
    assert "logged_model.scratch" not in tags
    model = client.get_logged_model(tags["logged_model.base_policy"])
    assert model.name == "base_policy" and model.source_run_id == run.info.run_id
    assert model.model_type == CHECKPOINT_MODEL_TYPE
    assert model.tags["hindsight.version"] == version
    assert model.tags["hindsight.path"] == str(tmp_path / "base_policy" / version / "base_policy")
    assert model.tags["mlflow.model.isExternal"] == "true"
    assert model.model_id in [output.model_id for output in client.get_run(run.info.run_id).outputs.model_outputs]
    stored = [artifact.path for artifact in client.list_logged_model_artifacts(model.model_id)]
    assert stored == ["MLmodel"]  # the weights stay in the catalog

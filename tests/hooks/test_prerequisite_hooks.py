"""``hooks.prerequisites``: a run whose persisted inputs were never written stops before
anything starts, in one line naming them and the commands that write them, in order.

The order is found on stand-in pipelines over a real catalog; one real session
(``kedro run --pipeline empo --env test`` in an empty project copy) shows the message and
that no MLflow run was opened."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset, Version
from kedro.pipeline import Pipeline, node
from kedro_datasets.pandas import ParquetDataset

from hindsight.datasets import ModelDirectoryDataset
from hindsight.hooks.prerequisites import MissingInputError, missing_inputs, missing_message, run_order

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipelines"))
from kedro_project import KedroProject  # noqa: E402

pytestmark = pytest.mark.pipeline


def _identity(*args):
    return args[0] if args else None


def _pipelines() -> dict[str, Pipeline]:
    ingestion = Pipeline([node(_identity, "params:seed", "trajectories", name="ingest")])
    cloning = Pipeline([node(_identity, ["trajectories", "pretrained@path"], "base_policy", name="clone")])
    empo = Pipeline([node(_identity, ["base_policy", "trajectories", "settings"], "empo_policy", name="empo")])
    return {"ingestion": ingestion, "behaviour_cloning": cloning, "empo": empo, "__default__": ingestion + cloning}


def _catalog(tmp_path, with_trajectories: bool = False) -> DataCatalog:
    version = Version(None, "2026-01-01T00.00.00.000Z")
    trajectories = ParquetDataset(filepath=str(tmp_path / "trajectories.parquet"), version=version)
    if with_trajectories:
        trajectories.save(pd.DataFrame({"x": [1]}))
    return DataCatalog({
        "trajectories": trajectories,
        "base_policy": ModelDirectoryDataset(path=str(tmp_path / "base_policy"), version=version),
        "pretrained@path": ModelDirectoryDataset(path=str(tmp_path / "pretrained"), version=version, optional=True, as_path=True),
        "settings": MemoryDataset(),
    })


def test_missing_inputs_are_the_persisted_ones_with_no_version(tmp_path):
    pipelines = _pipelines()
    assert missing_inputs(pipelines["empo"], _catalog(tmp_path)) == ["base_policy", "trajectories"]
    assert missing_inputs(pipelines["empo"], _catalog(tmp_path, with_trajectories=True)) == ["base_policy"]


def test_the_producers_run_in_order(tmp_path):
    pipelines = _pipelines()
    catalog = _catalog(tmp_path)
    order = run_order(["base_policy", "trajectories"], pipelines, catalog, exclude=["empo"])
    assert order == ["ingestion", "behaviour_cloning"]
    assert run_order(["base_policy"], pipelines, _catalog(tmp_path, with_trajectories=True), exclude=["empo"]) == ["behaviour_cloning"]
    message = missing_message("empo", ["base_policy", "trajectories"], order, pipelines, "test")
    assert message == (
        "Pipeline 'empo' reads base_policy, trajectories, which no run has written yet: run first "
        "`kedro run --pipeline ingestion --env test && kedro run --pipeline behaviour_cloning --env test` "
        "(or `kedro run --env test`, the default pipeline, which writes them too)."
    )
    assert "\n" not in message
    assert "no registered pipeline writes it" in missing_message("empo", ["x"], run_order(["x"], pipelines, catalog), pipelines, None)


def test_kedro_run_of_empo_on_a_fresh_project_says_what_to_run_first(tmp_path):
    project = KedroProject(tmp_path)
    with pytest.raises(MissingInputError) as error:
        project.run(pipeline_names=["empo"])
    assert str(error.value) == (
        "Pipeline 'empo' reads base_policy, trajectories, which no run has written yet: run first "
        "`kedro run --pipeline ingestion --env test && kedro run --pipeline behaviour_cloning --env test` "
        "(or `kedro run --env test`, the default pipeline, which writes them too)."
    )
    assert project.mlflow_runs() == []  # stopped before kedro-mlflow opened a run

"""``hooks.lineage``: the datasets a run reads and writes become its MLflow dataset inputs,
under their Kedro names, their Kedro versions as digests, once each; a dataset written and
read back in the same run is an output only; in-memory data and parameters are not logged."""

from __future__ import annotations

import mlflow
import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset, Version
from kedro_datasets.pandas import ParquetDataset

from hindsight.hooks import DatasetLineageHooks
from hindsight.hooks.lineage import mlflow_dataset

READ_VERSION = "2026-01-01T00.00.00.000Z"
WRITE_VERSION = "2026-01-02T00.00.00.000Z"


@pytest.fixture()
def experiment(tmp_path):
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        yield mlflow.create_experiment("lineage", artifact_location=(tmp_path / "artifacts").as_uri())
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        mlflow.set_tracking_uri(previous)


def test_a_run_logs_what_it_read_and_wrote(experiment, tmp_path):
    table = pd.DataFrame({"episode_id": ["a", "b", "c"], "reward": [0.0, 1.0, 0.5]})
    ParquetDataset(filepath=str(tmp_path / "raw.parquet"), version=Version(None, READ_VERSION)).save(table)
    catalog = DataCatalog({
        "raw": ParquetDataset(filepath=str(tmp_path / "raw.parquet"), version=Version(None, WRITE_VERSION)),
        "trajectories": ParquetDataset(filepath=str(tmp_path / "trajectories.parquet"), version=Version(None, WRITE_VERSION)),
        "scratch": MemoryDataset(),
    })
    hooks = DatasetLineageHooks()
    hooks.after_catalog_created(catalog)
    with mlflow.start_run(experiment_id=experiment) as run:
        hooks.before_pipeline_run({}, None, catalog)
        hooks.after_dataset_loaded("raw", catalog.load("raw"), node=None)
        hooks.after_dataset_loaded("params:seed", 0, node=None)
        catalog.save("trajectories", table)
        hooks.after_dataset_saved("trajectories", table, node=None)
        hooks.after_dataset_loaded("trajectories", catalog.load("trajectories"), node=None)  # read back: an output already
        catalog.save("scratch", table)
        hooks.after_dataset_saved("scratch", table, node=None)
        hooks.after_dataset_loaded("raw", table, node=None)  # twice: logged once
    inputs = mlflow.MlflowClient().get_run(run.info.run_id).inputs.dataset_inputs
    logged = {item.dataset.name: item for item in inputs}
    assert sorted(logged) == ["raw", "trajectories"] and len(inputs) == 2
    context = {name: {tag.key: tag.value for tag in item.tags}["mlflow.data.context"] for name, item in logged.items()}
    assert context == {"raw": "input", "trajectories": "output"}
    assert logged["raw"].dataset.digest == READ_VERSION and logged["trajectories"].dataset.digest == WRITE_VERSION
    assert str(tmp_path / "trajectories.parquet" / WRITE_VERSION / "trajectories.parquet") in logged["trajectories"].dataset.source
    assert '"num_rows": 3' in logged["trajectories"].dataset.profile
    assert "episode_id" in logged["trajectories"].dataset.schema


def test_a_table_is_described_from_its_first_rows_without_a_digest_pass(tmp_path, monkeypatch):
    import mlflow.data.pandas_dataset as pandas_dataset

    monkeypatch.setattr(pandas_dataset, "compute_pandas_digest", lambda df: pytest.fail("the table was hashed"))
    table = pd.DataFrame({"x": range(10_000)})
    entity = mlflow_dataset("big", table, tmp_path / "big.parquet", READ_VERSION)
    assert entity.digest == READ_VERSION and entity.profile["num_rows"] == 10_000
    assert [column.name for column in entity.schema.inputs] == ["x"]


def test_outside_a_run_nothing_is_logged(tmp_path):
    assert mlflow.active_run() is None
    catalog = DataCatalog({"raw": ParquetDataset(filepath=str(tmp_path / "raw.parquet"))})
    hooks = DatasetLineageHooks()
    hooks.after_catalog_created(catalog)
    hooks.after_dataset_loaded("raw", pd.DataFrame({"x": [1]}), node=None)  # no error, no run started
    assert mlflow.active_run() is None

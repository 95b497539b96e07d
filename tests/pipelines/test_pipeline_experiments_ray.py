"""The experiments pipeline with ``experiments.executor: ray`` (a local Ray instance) against
the local loop, on two cells of the trained project (conf/test, tiny model): the same cells
table, results and report but for where, when and whether now the cells ran (the data
versions listed are the process's); every cell an MLflow child run of the pipeline's run,
opened on its Ray worker and tagged with its node.

The local loop's cells are those the session's grid ran (``experiment_grid`` in
tests/pipelines/conftest.py): the local run here reads them back (status ``skipped``) from the
records and summaries the grid left in its project, which this test's project copies; the
Ray run, with its own, trains them again on Ray."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest

from kedro_project import KedroProject

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]  # a grid on a Ray instance: `-m slow` (CI runs it)

PLACEMENT = ["node", "run_id", "seconds"]
RAY_RECORDS = {"cache_dir": "data/07_model_output/cells_ray", "summaries_dir": "results/grid_ray"}
"""The Ray run's own records and summaries (the local run reads the grid's, at the defaults)."""


def grid_of(executor: str) -> dict:
    """Runtime parameters: two cells of the quick preset, on ``executor``."""
    own = RAY_RECORDS if executor == "ray" else {}
    return {"experiments": {
        "executor": executor, **own,
        "presets": {"quick": {"methods": ["grpo", "seed"], "fractions": [1.0], "fraction_methods": []}},
    }}


@pytest.fixture(scope="module")
def both(experiment_grid, tmp_path_factory):
    """The local run (the grid's cells read back) and the Ray run, on a copy of the grid's project."""
    grid_project, _, _ = experiment_grid
    project = KedroProject.copy_of(grid_project, tmp_path_factory.mktemp("experiments_ray"))
    shutil.copytree(grid_project.path / "results", project.path / "results")  # the grid's summaries (experiments.summaries_dir)
    runs = {executor: project.run(pipeline_names=["experiments"], from_nodes=["experiments.check_grid_inputs"], runtime_params=grid_of(executor))
            for executor in ("local", "ray")}
    return project, runs


def _outputs(record, name):
    return record.outputs[name]


def test_ray_gives_the_local_loops_cells_results_and_report(both):
    _, runs = both
    cells = {e: pd.read_csv(_outputs(r, "07_model_output/experiment_cells.csv")) for e, r in runs.items()}
    assert list(cells["ray"]["status"]) == ["finished", "finished"]
    assert list(cells["local"]["status"]) == ["skipped", "skipped"]  # the grid's own cells, not trained again
    pd.testing.assert_frame_equal(cells["ray"].drop(columns=[*PLACEMENT, "status"]), cells["local"].drop(columns=[*PLACEMENT, "status"]))
    assert cells["ray"]["node"].str.match(r"^[\d.]+/[0-9a-f]{8}$").all()  # a Ray node: address/id
    results = {e: pd.read_csv(_outputs(r, "08_reporting/experiment_results.csv")).drop(columns=["run_ids"]) for e, r in runs.items()}
    pd.testing.assert_frame_equal(results["ray"], results["local"])
    reports = {}
    for executor, record in runs.items():
        text = _outputs(record, "08_reporting/experiment_report.md").read_text()
        for value in cells[executor][["run_id", "node"]].to_numpy().ravel():
            text = text.replace(str(value), "<placement>")
        text = re.sub(r"\| (finished|skipped) \| <placement> \| <placement> \| \d+ \|", "| <status> | <placement> | <placement> | <s> |", text)
        body, versions = text.split("## Data versions")
        assert "`stage1_policy`" in versions
        reports[executor] = body  # the versions: this process's, which ran every grid
    assert reports["ray"] == reports["local"]


def test_each_ray_cell_is_a_child_run_tagged_with_its_node(both):
    project, runs = both
    cells = pd.read_csv(_outputs(runs["ray"], "07_model_output/experiment_cells.csv"))
    by_id = {run.info.run_id: run for run in project.mlflow_runs()}
    children = [by_id[run_id] for run_id in cells["run_id"]]
    parents = {run.data.tags["mlflow.parentRunId"] for run in children}
    assert len(parents) == 1 and by_id[parents.pop()].data.metrics["experiments/cells"] == 2
    for run, node in zip(children, cells["node"]):
        assert run.info.status == "FINISHED"
        assert run.data.tags["hindsight.node"] == node and node.endswith(run.data.tags["ray.node_id"][:8])
        assert "rollout/success_rate" in run.data.metrics  # logged from the worker

"""The experiments pipeline on the quick preset (conf/test: tiny model) with the opt-in
methods (``experiment_grid``, tests/pipelines/conftest.py: one grid for every grid test): the
grid runs every cell as an MLflow child run of the pipeline's run, the report has a row per
method, the plots exist, and re-running the grid on the same data skips the finished cells."""

from __future__ import annotations

import json

import pandas as pd
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]  # a multi-process or whole-grid test: `-m slow` (CI runs it)

QUICK_METHODS = {"grpo", "gigpo", "opid", "seed", "seed_no_stage1", "seed_no_distill", "seed_fixed_bank"}
OPT_IN_METHODS = {"wmr1", "grpo_state2state", "grpo_async"}
QUICK_CELLS = len(QUICK_METHODS | OPT_IN_METHODS) + 1  # every method at 100% of the tasks, seed at 50%, one seed


def test_grid_runs_every_cell_as_a_child_run(experiment_grid):
    project, first, _ = experiment_grid
    cells = pd.read_csv(first.outputs["07_model_output/experiment_cells.csv"])
    assert len(cells) == QUICK_CELLS
    assert set(cells["status"]) == {"finished"}
    runs = {run.info.run_id: run for run in project.mlflow_runs()}
    children = [runs[run_id] for run_id in cells["run_id"]]
    parents = {run.data.tags.get("mlflow.parentRunId") for run in children}
    assert len(parents) == 1  # one parent: the pipeline's run
    parent = runs[parents.pop()]
    assert "mlflow.parentRunId" not in parent.data.tags
    assert parent.data.metrics["experiments/cells"] == QUICK_CELLS
    assert all(run.info.status == "FINISHED" for run in children)
    assert {run.data.params["method"] for run in children} == set(cells["method"])
    # each child holds its own per-update metrics
    assert all("rollout/success_rate" in run.data.metrics for run in children)


def test_results_table_report_and_plots(experiment_grid):
    _, first, _ = experiment_grid
    results = pd.read_csv(first.outputs["08_reporting/experiment_results.csv"])
    full = results[results["fraction"] == 1.0]
    assert set(full["method"]) == QUICK_METHODS | OPT_IN_METHODS
    assert set(full["split"]) == {"seen", "unseen"}
    assert {"cookingworld", "twc", "all"} <= set(full["task_type"])
    assert results["mean"].between(0, 1).all() and (results["episodes_per_seed"] > 0).all()
    report = first.outputs["08_reporting/experiment_report.md"].read_text()
    for label in ("GRPO", "GiGPO", "OPID", "SEED w/o Stage 1", "SEED w/o distillation", "SEED w/o on-policy skills"):
        assert f"| {label} |" in report
    cells = pd.read_csv(first.outputs["07_model_output/experiment_cells.csv"])
    assert all(run_id in report for run_id in cells["run_id"])  # every number traceable to its run
    assert "`stage1_policy`" in report  # and to its data version
    assert "Wilson 95% interval" in report
    mechanism = report.split("## Mechanism")[1].split("##")[0]
    assert "parse rate" in mechanism and "| SEED |" in mechanism  # SEED's own terms, per method
    for plot in ("experiment_curves.png", "experiment_data_efficiency.png"):
        assert first.outputs[f"08_reporting/{plot}"].stat().st_size > 1000


def test_every_method_is_paired_against_grpo_over_the_same_tasks(experiment_grid):
    _, first, _ = experiment_grid
    outcomes = pd.read_parquet(first.outputs["07_model_output/experiment_outcomes.parquet"])
    cells = pd.read_csv(first.outputs["07_model_output/experiment_cells.csv"])
    assert set(outcomes["cell"]) == set(cells.loc[cells["status"] == "finished", "cell"])  # every finished cell's end policy
    per_cell = outcomes[outcomes["fraction"] == 1.0].groupby("cell").apply(lambda t: frozenset(zip(t["eval_split"], t["task_seed"], t["agent"])))
    assert per_cell.nunique() == 1  # the same held-out tasks and decodings for every cell
    report = first.outputs["08_reporting/experiment_report.md"].read_text()
    paired = report.split("## Paired against grpo")[1]
    for method in set(cells["method"]) - {"grpo"}:
        assert f"| {method} | 1 |" in paired


def test_learning_curves_start_at_update_zero(experiment_grid):
    _, first, _ = experiment_grid
    histories = pd.read_parquet(first.outputs["07_model_output/experiment_histories.parquet"])
    for _, history in histories.groupby("cell"):
        assert history["update"].tolist() == [0, 1, 2]
        assert history["charts/env_steps_total"].is_monotonic_increasing
        evaluated = history.set_index("update")["eval/seen/all/success_rate"].dropna()
        assert evaluated.index.tolist() == [0, 2]  # conf/test: eval_every 2, and always at the start


def test_rerun_skips_finished_cells(experiment_grid):
    project, first, rerun = experiment_grid
    again = pd.read_csv(rerun.outputs["07_model_output/experiment_cells.csv"])
    before = pd.read_csv(first.outputs["07_model_output/experiment_cells.csv"])
    assert set(again["status"]) == {"skipped"}
    assert again["run_id"].tolist() == before["run_id"].tolist()  # the results of the first run
    child_runs = {run.info.run_id for run in project.mlflow_runs() if "mlflow.parentRunId" in run.data.tags}
    assert child_runs == set(before["run_id"])  # no cell was trained again


def test_failed_cell_is_recorded_and_the_grid_goes_on(tmp_path):
    from hindsight.experiments.grid import Cell, run_grid

    cells = [Cell("grpo", 0, 1.0), Cell("seed", 0, 1.0), Cell("gigpo", 0, 1.0)]

    def run_cell(cell):
        if cell.method == "seed":
            raise RuntimeError("boom")
        return {"final": {}}

    records = run_grid(cells, run_cell, key_of=lambda cell: cell.name, cache_dir=tmp_path)
    assert [r["status"] for r in records] == ["finished", "failed", "finished"]
    assert "RuntimeError: boom" in records[1]["error"]
    # a re-run skips the finished cells and retries the failed one
    rerun = run_grid(cells, lambda cell: {"final": {}}, key_of=lambda cell: cell.name, cache_dir=tmp_path)
    assert [r["status"] for r in rerun] == ["skipped", "finished", "skipped"]
    assert json.loads((tmp_path / "seed-f100-s0.json").read_text())["status"] == "finished"

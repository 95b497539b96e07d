"""The grid's opt-in methods that need more than the experiments pipeline trains, in a
KedroSession (conf/test): ``wmr1`` (the world model of ``kedro run --pipeline world_model``),
``grpo_state2state`` (the checkpoint of ``kedro run --pipeline state2state``) and
``grpo_async`` (a rollout worker process), one cell each next to ``grpo`` at the same budget
(cells of the session's one grid, ``experiment_grid`` in tests/pipelines/conftest.py); and a
preset listing them before those models exist stops before any training, naming the
commands that make them."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.experiments.starts import MissingGridInput
from kedro_project import KedroProject

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]

NEW_METHODS = ["wmr1", "grpo_state2state", "grpo_async"]


def grid_of(methods: list[str]) -> dict:
    """Runtime parameters: the quick preset with these methods, one seed, all tasks."""
    return {"experiments": {"presets": {"quick": {"methods": methods, "fractions": [1.0], "fraction_methods": []}}}}


def test_listed_methods_without_their_models_stop_the_run_first(tmp_path):
    project = KedroProject(tmp_path)
    with pytest.raises(MissingGridInput) as error:
        project.run(pipeline_names=["experiments"], runtime_params=grid_of(["grpo", *NEW_METHODS]))
    message = str(error.value)
    assert "`kedro run --pipeline world_model`" in message and "wmr1" in message
    assert "`kedro run --pipeline state2state`" in message and "grpo_state2state" in message
    assert "grpo_async" not in message  # it needs nothing from the catalog
    assert project.last_record.outputs == {}, "the check runs before any stage writes anything"


@pytest.fixture(scope="module")
def grid(experiment_grid):
    """After the default run, the world model and the State2State checkpoint, the grid with
    the new methods next to the quick preset's (their first run: project and record)."""
    project, first, _ = experiment_grid
    return project, first


def test_each_new_method_runs_as_a_grid_cell(grid):
    _, record = grid
    cells = pd.read_csv(record.outputs["07_model_output/experiment_cells.csv"])
    ours = cells[cells["method"].isin(["grpo", *NEW_METHODS])]
    assert sorted(ours["method"]) == sorted(["grpo", *NEW_METHODS]) and (ours["fraction"] == 1.0).all()
    assert set(ours["status"]) == {"finished"}, ours[["method", "error"]]
    histories = pd.read_parquet(record.outputs["07_model_output/experiment_histories.parquet"])
    updates = histories.groupby("method")["update"].max()
    assert (updates == 2).all()  # the same RL budget (quick preset: 2 updates)
    by_method = {method: history.set_index("update") for method, history in histories.groupby("method")}

    wmr1 = by_method["wmr1"]
    assert (wmr1.loc[1:, "world_model/calls"] > 0).all()
    assert (wmr1["charts/env_steps_total"] == 0).all(), "simulated steps are not environment steps"
    assert wmr1["eval/seen/all/success_rate"].dropna().index.tolist() == [0, 2]  # on the real environment

    async_rl = by_method["grpo_async"]
    assert (async_rl.loc[1:, "async/staleness_max"] <= 1).all()
    assert "async/staleness_max" not in by_method["grpo"] or by_method["grpo"]["async/staleness_max"].isna().all()

    grpo, after_state2state = by_method["grpo"], by_method["grpo_state2state"]
    assert (after_state2state.loc[1:, "rollout/env_steps"] > 0).all()
    # its own starting checkpoint, evaluated at update 0 on the same held-out tasks
    assert grpo.loc[0, "eval/seen/all/episodes"] == after_state2state.loc[0, "eval/seen/all/episodes"]


def test_report_names_the_new_methods_and_their_catalog_models(grid):
    _, record = grid
    report = record.outputs["08_reporting/experiment_report.md"].read_text()
    for label in ("| GRPO |", "| WM-R1 |", "| GRPO after State2State |", "| GRPO + async rollouts |"):
        assert label in report
    for dataset in ("`world_model`", "`state2state_policy`", "`stage1_policy`", "`base_policy`"):
        assert dataset in report  # the data versions every number came from

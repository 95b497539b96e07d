"""The dual-control telecom domain joins the pipelines by configuration alone:
``environment.env: dual_control`` with the game ``telecom``; ingestion plays its gold solver
and behaviour cloning trains the tiny policy on those episodes."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.envs.dual_control import parse_call

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

RUNTIME_PARAMS = {
    "environment": {"env": "dual_control", "max_steps": 20, "games": [{"game": "telecom", "params": {}}]},
    "ingestion": {"expert_episodes": {"train": 6, "dev": 0, "test": 0}},
}


@pytest.fixture(scope="module")
def telecom_run(tmp_path_factory):
    project = KedroProject(tmp_path_factory.mktemp("dual_control_project"))
    return project.run(pipeline_names=["ingestion", "behaviour_cloning"], runtime_params=RUNTIME_PARAMS)


def test_ingestion_and_behaviour_cloning_run_on_the_telecom_domain(telecom_run):
    trajectories = pd.read_parquet(telecom_run.outputs["03_primary/trajectories.parquet"])
    assert set(trajectories["env"]) == {"dual_control"} and set(trajectories["task_type"]) == {"telecom"}
    assert trajectories["episode_id"].nunique() == 6
    assert trajectories.groupby("episode_id")["won"].any().all()  # the gold solver won every task
    assert all(parse_call(action).text == action for action in trajectories["action"])
    assert all(action in valid for action, valid in zip(trajectories["action"], trajectories["valid_actions"]))
    history = pd.read_parquet(telecom_run.outputs["07_model_output/bc_history.parquet"])
    assert len(history) and history["loss"].notna().all()

"""The ingestion pipeline through ``KedroSession``: versioned outputs, MLflow tracking, and a
malformed external file that fails the run without writing a new version."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

TRAJECTORIES = "03_primary/trajectories.parquet"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """A fresh project where ingestion ran twice (two sessions)."""
    project = KedroProject(tmp_path_factory.mktemp("ingestion_project"))
    first = project.run(pipeline_names=["ingestion"])
    second = project.run(pipeline_names=["ingestion"])
    return project, first, second


def test_each_run_writes_a_new_version(ingested):
    project, first, second = ingested
    versions = project.versions(TRAJECTORIES)
    assert len(versions) == 2
    assert first.outputs[TRAJECTORIES].parent.name == versions[0]
    assert second.outputs[TRAJECTORIES].parent.name == versions[1]
    for dataset in ("03_primary/expert_trajectories.parquet", "03_primary/episode_summary.parquet"):
        assert len(project.versions(dataset)) == 2, dataset
    first_table, second_table = (pd.read_parquet(run.outputs[TRAJECTORIES]) for run in (first, second))
    pd.testing.assert_frame_equal(first_table, second_table)  # the expert episodes are deterministic


def test_trajectories_hold_the_expert_episodes_of_conf_test(ingested):
    _, first, _ = ingested
    table = pd.read_parquet(first.outputs[TRAJECTORIES])
    episodes = table.drop_duplicates("episode_id")
    assert episodes.groupby("task_type").size().to_dict() == {"cookingworld": 6, "twc": 6}  # expert_episodes.train
    assert set(table["source"]) == {"expert"} and set(table["split"]) == {"train"}
    assert table.groupby("episode_id")["step"].apply(lambda s: s.tolist() == list(range(len(s)))).all()


def test_no_mlflow_run_is_left_active_after_a_session(ingested):
    _, first, second = ingested
    assert first.run_left_active is None and second.run_left_active is None


def test_mlflow_run_holds_counts_and_flattened_params(ingested):
    project, first, second = ingested
    assert [run.info.status for run in project.mlflow_runs()] == ["FINISHED", "FINISHED"]
    table = pd.read_parquet(first.outputs[TRAJECTORIES])
    metrics, params = first.mlflow_run.data.metrics, first.mlflow_run.data.params
    assert metrics["ingestion/episodes"] == table["episode_id"].nunique() == 12
    assert metrics["ingestion/steps"] == len(table)
    assert metrics["ingestion/episodes/twc"] == 6
    won = table.groupby("episode_id")["won"].any()
    assert metrics["ingestion/success_rate"] == pytest.approx(won.mean())
    assert params["ingestion.expert_episodes.train"] == "6"  # nested blocks are flattened with "."
    assert params["environment.max_steps"] == "12"
    assert params["environment.reward.success_reward"] == "10.0"
    assert not any(key.startswith("behaviour_cloning.") for key in params)  # only the parameters of the nodes that ran
    assert first.mlflow_run.info.run_id != second.mlflow_run.info.run_id


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def valid_row(step: int, **overrides) -> dict:
    """A valid trajectory row of episode "external-1" (project schema)."""
    row = {
        "episode_id": "external-1", "group_id": "textworldexpress/twc/train/900", "env": "textworldexpress",
        "task_type": "twc", "task": "Put things away.", "split": "train", "seed": 900, "step": step,
        "observation": f"You are in the kitchen ({step}).", "anchor_observation": f"You are in the kitchen ({step}).",
        "valid_actions": ["look around", "take apple"], "action": "look around", "response": "look around",
        "reward": 0.0, "score": 0.0, "done": False, "won": False, "action_valid": True,
        "source": "expert", "policy_version": -1,
    }
    return {**row, **overrides}


def test_malformed_external_file_fails_the_run_and_writes_no_trajectories(ingested):
    project, _, _ = ingested
    bad_file = project.path / "data" / "01_raw" / "bad_steps.jsonl"
    write_jsonl(bad_file, [valid_row(0), {**valid_row(1), "step": "one"}])
    before = project.versions(TRAJECTORIES)
    runs_before = len(project.mlflow_runs())
    with pytest.raises(Exception) as failure:
        project.run(
            pipeline_names=["ingestion"],
            runtime_params={"ingestion": {"external_files": ["data/01_raw/bad_steps.jsonl"]}},
        )
    message = str(failure.value)
    assert "bad_steps.jsonl" in message and "line 2" in message and "field 'step'" in message, message
    assert project.versions(TRAJECTORIES) == before
    assert TRAJECTORIES not in project.last_record.outputs
    runs = project.mlflow_runs()
    assert len(runs) == runs_before + 1 and runs[-1].info.status == "FAILED"
    assert runs[-1].data.params["ingestion.external_files"] == "['data/01_raw/bad_steps.jsonl']"


def test_valid_external_file_is_ingested_with_the_experts(ingested):
    project, _, _ = ingested
    good_file = project.path / "data" / "01_raw" / "good_steps.jsonl"
    write_jsonl(good_file, [valid_row(0), valid_row(1, reward=10.0, score=1.0, done=True, won=True)])
    record = project.run(
        pipeline_names=["ingestion"], runtime_params={"ingestion": {"external_files": ["data/01_raw/good_steps.jsonl"]}}
    )
    table = pd.read_parquet(record.outputs[TRAJECTORIES])
    external = table[table["episode_id"] == "external-1"]
    assert external["step"].tolist() == [0, 1] and external["won"].tolist() == [False, True]
    assert table["episode_id"].nunique() == 13
    assert record.mlflow_run.data.metrics["ingestion/episodes"] == 13


def test_conversation_episodes_without_an_outcome_are_assumed_won_and_counted(ingested):
    """Agent-SFT conversation sets are successful demonstrations with no outcome field:
    ``ingestion.assume_success`` (true by default) decides, and the run logs how many."""
    project, _, _ = ingested
    conversation = [{"from": "human", "value": "Your task is to: find the key."}, {"from": "gpt", "value": "Action: look"}]
    path = project.path / "data" / "01_raw" / "demonstrations.json"
    path.write_text(json.dumps([{"id": "demo-0", "conversations": conversation}]))
    record = project.run(
        pipeline_names=["ingestion"], runtime_params={"ingestion": {"external_files": ["data/01_raw/demonstrations.json"]}}
    )
    table = pd.read_parquet(record.outputs[TRAJECTORIES])
    assert table.loc[table["env"] == "external", "won"].any()
    assert record.mlflow_run.data.metrics["ingestion/outcome_assumed_episodes"] == 1

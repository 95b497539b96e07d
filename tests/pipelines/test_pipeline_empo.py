"""``kedro run --pipeline empo`` through ``KedroSession``: EMPO from the ingested
TextWorldExpress gold episodes, and from a conversation-format file with no environment
episodes at all. Each asserts the mechanism ran (matches and patches counted, finite
losses, semi-online evaluations) and that new versions were written."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"
OUTPUTS = (
    "06_models/empo_policy",
    "07_model_output/empo_history.parquet",
    "07_model_output/empo_last_rollout.parquet",
    "07_model_output/empo_semi_online.parquet",
)


def _check_empo_run(record, updates: int = 2) -> pd.DataFrame:
    for dataset in OUTPUTS:
        assert dataset in record.outputs, f"no new version of {dataset}"
    history = pd.read_parquet(record.outputs["07_model_output/empo_history.parquet"])
    trained = history[history["update"] > 0]
    assert len(trained) == updates
    assert trained["losses/total"].map(math.isfinite).all()
    assert (trained["empo/match_rate"] + trained["empo/patch_rate"]).gt(0).all()
    rollout = pd.read_parquet(record.outputs["07_model_output/empo_last_rollout.parquet"])
    assert set(rollout["env"]) == {"expert_replay"} and set(rollout["source"]) <= {"rollout", "patched"}
    semi_online = pd.read_parquet(record.outputs["07_model_output/empo_semi_online.parquet"])
    assert semi_online["update"].tolist() == list(range(updates + 1))
    assert semi_online["semi_online/trajectories"].gt(0).all()
    metrics = record.mlflow_run.data.metrics
    assert "empo/patch_rate" in metrics and "semi_online/success_rate" in metrics
    assert not record.mlflow_run.data.tags["logged_model.empo_policy"].startswith("failed")  # an MLflow model of the run
    return history


def test_empo_pipeline_from_environment_expert_episodes(trained_project, tmp_path):
    project = KedroProject.copy_of(trained_project[0], tmp_path)  # its gold episodes and base policy
    record = project.run(pipeline_names=["empo"])
    history = _check_empo_run(record)
    assert history["charts/env_steps_total"].iloc[-1] > 0  # replayed steps, no simulator steps


def _conversation(index: int) -> dict:
    """An AgentInstruct-style demonstration: preamble, "OK", the instruction, thoughts."""
    item, place = ["apple", "mug", "book", "egg", "key", "pen"][index % 6], ["table", "shelf", "drawer"][index % 3]
    turns = [
        {"from": "human", "value": "Interact with a household to solve a task. Reply with 'Thought: ...' and 'Action: ...'."},
        {"from": "gpt", "value": "OK"},
        {"from": "human", "value": f"You are in a room. You see a counter 1 and a {place} 1. Put the {item} on the {place}."},
        {"from": "gpt", "value": f"Thought: The {item} should be on the counter.\nAction: go to counter 1"},
        {"from": "human", "value": f"On the counter 1, you see a {item} 1."},
        {"from": "gpt", "value": f"Action: take {item} 1 from counter 1"},
        {"from": "human", "value": f"You pick up the {item} 1."},
        {"from": "gpt", "value": f"Action: go to {place} 1"},
        {"from": "human", "value": f"You arrive at the {place} 1."},
        {"from": "gpt", "value": f"Action: put {item} 1 in {place} 1"},
    ]
    return {"id": f"household_{index}", "conversations": turns}  # no outcome field: assumed successful


def test_empo_pipeline_from_a_conversation_file_without_environment_episodes(tmp_path):
    project = KedroProject(tmp_path / "project")
    raw = project.path / "data" / "01_raw"
    (raw / "household.jsonl").write_text("\n".join(json.dumps(_conversation(i)) for i in range(8)) + "\n")
    shutil.copy(EXAMPLES / "sharegpt_alfworld.json", raw / "sharegpt_alfworld.json")
    params = {
        "ingestion": {
            "expert_episodes": {"train": 0, "dev": 0, "test": 0},
            "external_files": ["data/01_raw/household.jsonl", "data/01_raw/sharegpt_alfworld.json"],
            "assume_success": True,
        }
    }
    record = project.run(pipeline_names=["ingestion", "behaviour_cloning", "empo"], runtime_params=params)
    trajectories = pd.read_parquet(record.outputs["03_primary/trajectories.parquet"])
    assert set(trajectories["env"]) == {"external"}  # no environment episode was collected
    history = _check_empo_run(record)
    rollout = pd.read_parquet(record.outputs["07_model_output/empo_last_rollout.parquet"])
    household = rollout[rollout["task"].str.contains("counter 1")]
    assert len(household) and not rollout["task"].str.contains("Interact with").any()  # the instruction, not the preamble
    assert rollout["valid_actions"].map(len).gt(1).all()  # candidates from the task type's actions
    assert history["empo/patch_rate"].iloc[1:].notna().all()


@pytest.mark.parametrize("bad", [{"patch_threshold": -1}, {"rl": {"algorithm": "grpo"}}])
def test_bad_empo_settings_name_the_key(bad):
    from hindsight.config import EmpoConfig
    from hindsight.params import ParameterError, build

    with pytest.raises((ParameterError, ValueError), match="empo"):
        build(EmpoConfig, bad, "empo")

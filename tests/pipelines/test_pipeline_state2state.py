"""``kedro run --pipeline state2state`` in the test configuration: exploration -> a versioned
goal task set -> RL on the goal tasks from the base policy -> a checkpoint; and the
``with_state2state`` pipeline starts the training stage from that checkpoint."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from hindsight.datasets.model_directory import ModelDirectoryDataset
from hindsight.pipeline_registry import register_pipelines
from hindsight.state2state.task_set import check_task_set

pytestmark = pytest.mark.pipeline


def _load_policy(path):
    return ModelDirectoryDataset(path=str(path)).load()


def test_state2state_pipeline_trains_on_a_versioned_goal_task_set(trained_project, state2state_run):
    _, default_run = trained_project
    record = state2state_run

    tasks = check_task_set(pd.read_parquet(record.outputs["05_model_input/state2state_tasks.parquet"]))
    assert 1 <= len(tasks) <= 8  # conf/test: max_tasks 8
    assert set(tasks["game"]) <= {"twc", "cookingworld"} and set(tasks["seed"]) <= {0, 1}  # tasks_per_game 2
    states = pd.read_parquet(record.outputs["04_feature/state2state_reached_states.parquet"])
    assert set(states["source"]) == {"random", "policy"}

    history = pd.read_parquet(record.outputs["07_model_output/state2state_history.parquet"])
    assert list(history["update"]) == [1, 2]
    assert history["rollout/success_rate"].between(0, 1).all() and (history["rollout/env_steps"] > 0).all()
    assert "eval/seen/twc/success_rate" in history  # the real tasks, evaluated at the last update

    base = _load_policy(default_run.outputs["06_models/base_policy"])
    trained = _load_policy(record.outputs["06_models/state2state_policy"])
    changed = [
        name for name, weight in trained.model.state_dict().items()
        if not torch.equal(weight, base.model.state_dict()[name])
    ]
    assert changed, "RL on the goal tasks changed no weight"

    metrics = record.mlflow_run.data.metrics
    assert metrics["state2state/tasks/count"] == len(tasks)
    assert "state2state/losses/total" in metrics and "state2state/rollout/success_rate" in metrics


def test_training_after_state2state_starts_from_its_checkpoint():
    pipelines = register_pipelines()
    for name in ("with_state2state", "training_from_state2state"):
        [train] = [node for node in pipelines[name].nodes if node.name == "training.train_with_rl"]
        assert train.inputs[:2] == ["state2state_policy", "state2state_policy"], name
    order = [node.name for node in pipelines["with_state2state"].nodes]
    assert order.index("state2state.train_on_state2state") < order.index("training.train_with_rl")
    assert "state2state_policy" in pipelines["training_from_state2state"].inputs()

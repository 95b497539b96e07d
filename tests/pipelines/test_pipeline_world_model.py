"""WM-R1 end to end in the test configuration: ``kedro run --pipeline world_model`` trains and
scores a world model on the default run's trajectories and rollouts, then ``kedro run
--pipeline wmr1`` trains the policy inside it (GRPO on the WM-R1 reward, stored-success
replay), with held-out evaluation on the real environment."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hindsight.policy.model import load_policy



def test_world_model_then_wmr1(trained_project, world_model_run):
    project, _ = trained_project

    world = world_model_run
    assert "06_models/world_model" in world.outputs
    model = load_policy(world.outputs["06_models/world_model"])
    assert model.model.num_parameters() > 0
    examples = pd.read_parquet(world.outputs["05_model_input/world_model_examples.parquet"])
    assert examples["heldout"].any() and (~examples["heldout"]).any()
    assert examples["terminal"].any(), "won episodes must teach the solved marker"
    assert {"expert", "rollout"} <= set(examples["source"])
    losses = pd.read_parquet(world.outputs["07_model_output/world_model_history.parquet"])["loss"]
    assert losses.map(math.isfinite).all() and len(losses) > 1
    evaluation = pd.read_parquet(world.outputs["07_model_output/world_model_evaluation.parquet"])
    assert len(evaluation) > 0
    assert evaluation["token_accuracy"].between(0, 1).all()
    metrics = world.mlflow_run.data.metrics
    assert 0 <= metrics["world_model/heldout_token_accuracy"] <= 1
    assert 0 <= metrics["world_model/heldout_exact_match"] <= 1
    assert metrics["world_model/heldout_examples"] == len(evaluation)

    runtime = {"training": {"rl": {"algorithm": "wmr1", "eval_every": 2, "updates": 2}}}
    rl = project.run(pipeline_names=["wmr1"], runtime_params=runtime)
    assert "06_models/rl_policy" in rl.outputs
    history = pd.read_parquet(rl.outputs["07_model_output/training_history.parquet"])
    assert len(history) == 2
    assert history["losses/total"].map(math.isfinite).all()
    assert (history["world_model/calls"] > 0).all()
    # imaginary turns (the default thinking) are rows of their own: one call per simulated row,
    # imaginary or committed, and at most n_wm_max (5) imaginary calls per episode
    assert (history["world_model/calls"] == history["world_model/simulated_steps"]).all()
    assert history["world_model/calls_per_step"].between(0, 5).all()
    assert history["world_model/simulated_success_rate"].between(0, 1).all()
    assert (history["world_model/replayed_groups"] <= history["world_model/all_failure_groups"]).all()
    assert (history["charts/env_steps_total"] == 0).all(), "simulated steps are not environment steps"
    assert any(c.startswith("eval/seen/") for c in history.columns), "held-out evaluation on the real environment"
    rollout = pd.read_parquet(rl.outputs["07_model_output/training_last_rollout.parquet"])
    assert "world_model" in set(rollout["source"])
    replayed = history["world_model/replayed_groups"].iloc[-1]
    assert (rollout.loc[rollout["source"] == "replay", "group_id"].nunique()) == replayed
    assert "world_model/calls" in rl.mlflow_run.data.metrics

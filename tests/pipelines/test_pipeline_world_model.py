"""WM-R1 end to end in the test configuration: ``kedro run --pipeline world_model`` trains and
scores a world model on the default run's trajectories and rollouts and on the Stage-1
policy's own episodes, played on the real environment, and calibrates its judgement on the
held-out ones; then ``kedro run --pipeline wmr1`` trains the policy inside it (GRPO on the
WM-R1 reward, stored-success replay), with held-out evaluation on the real environment."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hindsight.data.outcomes import episode_outcomes
from hindsight.policy.model import load_policy
from hindsight.rollout.policy_episodes import POLICY_PREFIX, heldout_episodes
from hindsight.world_model.transitions import FAILED_MARKER, SOLVED_MARKER

pytestmark = pytest.mark.pipeline



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


def test_the_world_model_learns_from_and_is_calibrated_on_the_policys_own_episodes(world_model_run):
    world = world_model_run
    played = pd.read_parquet(world.outputs["02_intermediate/world_model_policy_episodes.parquet"])
    # conf/test: 2 games x 2 train-fold tasks x 3 episodes of the Stage-1 policy, on the real games
    assert played["episode_id"].str.startswith(POLICY_PREFIX).all() and played["episode_id"].nunique() == 12
    assert (played["source"] == "rollout").all() and played["group_id"].str.contains("/train/").all()
    examples = pd.read_parquet(world.outputs["05_model_input/world_model_examples.parquet"])
    mine = examples[examples["source"] == "policy"]
    assert set(mine["episode_id"]) <= set(played["episode_id"]) and (~mine["heldout"]).any()
    won = episode_outcomes(played).set_index("episode_id")["success"]
    for row in mine[mine["terminal"]].itertuples():  # each policy ending learnt as it really ended
        assert row.response == (SOLVED_MARKER if won[row.episode_id] else FAILED_MARKER)

    endings = pd.read_parquet(world.outputs["07_model_output/world_model_endings.parquet"])
    held = heldout_episodes(played, 0.25)
    assert len(endings) > 0 and set(endings["episode_id"]) == set(held["episode_id"])
    assert (endings["real_ending"] == "won").sum() == won[list(endings["episode_id"])].sum()
    calibration = pd.read_csv(world.outputs["08_reporting/world_model_calibration.csv"])
    summary = calibration[calibration["part"] == "endings"].set_index("real_ending")
    assert summary.loc["all", "episodes"] == len(endings)
    assert summary.loc["all", "outcome_agreement"] == pytest.approx(endings["outcome_agrees"].mean())
    metrics = world.mlflow_run.data.metrics
    assert metrics["world_model/calibration/all_episodes"] == len(endings)
    assert metrics["world_model/calibration/won_episodes"] + metrics["world_model/calibration/lost_episodes"] == len(endings)
    imagined = calibration[(calibration["part"] == "imagination") & (calibration["task_type"] == "all")].iloc[0]
    assert imagined["imagined_episodes"] == 2 * imagined["tasks"] > 0  # conf/test: 2 imagined episodes per task
    assert metrics["world_model/imagined_won_share"] == pytest.approx(imagined["imagined_won_share"])
    assert 0 <= metrics["world_model/imagined_real_success_rate"] <= 1

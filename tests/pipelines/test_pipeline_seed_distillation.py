"""SEED distillation through ``KedroSession`` with skills that exist: the "without on-policy
skills" setting (``training.rl.methods.seed.skill_source=fixed_bank``), with the Stage-1 skills accepted
without validation so that the bank covers the training tasks. The same session runs the
scoring pipeline on those skills.

Runs on the project the whole default pipeline trained (its policies and trajectories are
the catalog's latest versions), as ``kedro run --pipeline ... --params ...`` would.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hindsight.training.distillation import SCORES_COLUMNS

pytestmark = pytest.mark.pipeline

RUNTIME_PARAMS = {
    "skills": {"validation": {"enabled": False}},
    "training": {"rl": {"methods": {"seed": {"skill_source": "fixed_bank"}}}},
}
"""Nested like Kedro's own ``--params skills.validation.enabled=false,training.rl.methods.seed.skill_source=fixed_bank``."""


@pytest.fixture(scope="module")
def distilled(trained_project):
    project, _ = trained_project
    return project.run(pipeline_names=["skills", "scoring", "training"], runtime_params=RUNTIME_PARAMS)


def test_runtime_params_are_merged_into_the_blocks(distilled):
    params = distilled.mlflow_run.data.params
    assert params["training.rl.methods.seed.skill_source"] == "fixed_bank"
    assert params["training.rl.updates"] == "2"  # the rest of training.rl still comes from conf/test
    assert params["skills.validation.enabled"] == "False"
    assert params["skills.validation.rollouts"] == "2"


def test_every_parsed_stage1_skill_is_in_the_bank(distilled):
    skills = pd.read_parquet(distilled.outputs["04_feature/skills.parquet"])
    assert len(skills) and (skills["accepted"] == skills["parse_ok"]).all() and skills["parse_ok"].any()


def test_fixed_bank_skills_are_distilled(distilled):
    history = pd.read_parquet(distilled.outputs["07_model_output/training_history.parquet"])
    assert history["update"].tolist() == [1, 2]
    assert (history["opd/bank_hit_rate"] == 1.0).all()  # every training task has a bank skill
    assert (history["opd/distilled_sample_ratio"] == 1.0).all()
    assert (history["losses/opd"].abs() > 0).all()
    for name in ("opd/gate_mean", "opd/gate_active_ratio"):
        assert history[name].between(0, 1).all() and history[name].notna().all(), name
    assert np.isfinite(history["opd/teacher_gap_mean"]).all()
    metrics = distilled.mlflow_run.data.metrics
    assert metrics["losses/opd"] == pytest.approx(history["losses/opd"].iloc[-1])
    last_skills = pd.read_parquet(distilled.outputs["07_model_output/training_last_skills.parquet"])
    assert set(last_skills["teacher"]) == {"fixed_bank"} and last_skills["parse_ok"].all()


def test_scoring_pipeline_writes_token_level_signals(distilled, trained_project):
    scores = pd.read_parquet(distilled.outputs["07_model_output/scores.parquet"])
    assert list(scores.columns) == SCORES_COLUMNS
    assert len(scores) > 0 and (scores["logp_plain"] <= 0).all() and (scores["logp_skill"] <= 0).all()
    np.testing.assert_allclose(scores["gap"], scores["logp_skill"] - scores["logp_plain"], atol=1e-6)
    np.testing.assert_allclose(scores["gate"], 1 / (1 + np.exp(-5.0 * scores["gap"])), atol=1e-6)
    assert distilled.mlflow_run.data.metrics["scoring/tokens"] == len(scores)
    assert distilled.outputs["08_reporting/scores_gate.png"].read_bytes()[:4] == b"\x89PNG"
    client = trained_project[0].mlflow_client()
    logged = {a.path for a in client.list_artifacts(distilled.mlflow_run.info.run_id, "reports")}
    assert "reports/scores_gate.png" in logged

"""The teacher fit after Stage 1's SFT (``stage1.fit_teacher``, ``stage1.teacher_fit``)
through ``KedroSession``: off by default (the Stage-1 checkpoint is the SFT one), and on
a copy of the trained project, as ``kedro run --pipeline stage1 --nodes stage1.fit_teacher
--params stage1.teacher_fit.episodes_per_game=8`` would: the policy plays its own episodes,
writes its skills, trains on them, and the Stage-1 checkpoint moves."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from hindsight.policy.model import load_policy
from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

FIT_PARAMS = {
    "stage1": {
        "teacher_fit": {"episodes_per_game": 8, "sft": {"max_steps": 2, "log_every": 1, "bf16_autocast": False, "max_length": 768}}
    }
}


def _state(path):
    return load_policy(path, device="cpu").model.state_dict()


def test_off_by_default_the_stage1_checkpoint_is_the_sft_one(trained_project):
    _, run = trained_project
    sft, stage1 = _state(run.outputs["06_models/stage1_sft_policy"]), _state(run.outputs["06_models/stage1_policy"])
    assert sft.keys() == stage1.keys() and all(torch.equal(sft[name], stage1[name]) for name in sft)
    assert pd.read_parquet(run.outputs["07_model_output/teacher_fit_history.parquet"]).empty
    assert "stage1/teacher_fit/episodes" not in run.mlflow_run.data.metrics


@pytest.fixture(scope="module")
def fitted(trained_project, tmp_path_factory):
    project = KedroProject.copy_of(trained_project[0], tmp_path_factory.mktemp("teacher_fit_project"))
    return project, project.run(pipeline_names=["stage1"], node_names=["stage1.fit_teacher"], runtime_params=FIT_PARAMS)


def test_the_fit_plays_writes_and_trains_on_what_it_won(fitted, trained_project):
    """The test configuration's policy (a few SFT steps) rarely wins: with no won episode
    the fit says so and keeps the SFT checkpoint; with one it trains and the checkpoint
    moves (``tests/skills/test_teacher_fit.py`` trains on real won steps either way)."""
    _, run = fitted
    metrics = run.mlflow_run.data.metrics
    assert metrics["stage1/teacher_fit/episodes"] == 16  # 2 games x 8 training tasks
    assert metrics["stage1/teacher_fit/own_skills"] <= round(16 * metrics["stage1/teacher_fit/success_rate"])
    history = pd.read_parquet(run.outputs["07_model_output/teacher_fit_history.parquet"])
    sft = _state(trained_project[1].outputs["06_models/stage1_sft_policy"])
    stage1 = _state(run.outputs["06_models/stage1_policy"])
    moved = any(not torch.equal(sft[name], stage1[name]) for name in sft)
    if metrics["stage1/teacher_fit/own_skills"] == 0:
        assert metrics["stage1/teacher_fit/fit_steps"] == 0 and history.empty and not moved
    else:
        assert metrics["stage1/teacher_fit/fit_steps"] >= metrics["stage1/teacher_fit/own_skills"]
        assert history["step"].tolist() == [1, 2] and (history["phase"] == "teacher_fit").all() and moved

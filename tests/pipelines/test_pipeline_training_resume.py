"""The training pipeline restarted with the same inputs resumes from its checkpoints instead
of training again: the checkpoint directory is a stable fingerprint of the settings and the
starting weights, across sessions."""

from __future__ import annotations

import pandas as pd
import pytest

pytestmark = pytest.mark.pipeline


def checkpoint_runs(project) -> set[str]:
    root = project.path / "data" / "06_models" / "rl_checkpoints"
    return {path.name for path in root.iterdir()} if root.is_dir() else set()


def test_rerun_with_the_same_inputs_resumes_the_finished_run(trained_project):
    project, default_run = trained_project
    before = checkpoint_runs(project)
    assert before, "the default run left no checkpoint"
    record = project.run(pipeline_names=["training"])
    assert checkpoint_runs(project) == before  # same fingerprint: no new run directory
    resumed = pd.read_parquet(record.outputs["07_model_output/training_history.parquet"])
    original = pd.read_parquet(default_run.outputs["07_model_output/training_history.parquet"])
    pd.testing.assert_frame_equal(resumed, original)
    assert "ppo/clipfrac" not in record.mlflow_run.data.metrics  # no update ran again

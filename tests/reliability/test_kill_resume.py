"""A training run SIGKILLed (the whole process group, JVM included) right after its first
checkpoint, then started again, ends exactly where an uninterrupted run ends: the same
``training_history`` (the wall-clock column aside) and bit-identical ``rl_policy`` weights.

``kedro run --pipeline training --env test`` runs as a subprocess in an isolated project
copy. Its inputs are seeded directly instead of by the prerequisite pipelines (about 45 s
more): the tiny test policy as ``stage1_policy`` and ``base_policy`` and an empty skills
table (SEED's teacher is the policy itself; the fixed bank is unused). ``conf/test`` runs 2
RL updates with a checkpoint after each, so the kill lands between them. The subprocess
helpers are those of ``benchmarks/reliability_resume.py``, which measures the same thing
at random kill points.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from kedro.io.core import Version, generate_timestamp

from hindsight.datasets import ModelDirectoryDataset
from hindsight.skills.records import skills_table
from hindsight.training.checkpoint import latest_checkpoint

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]  # `kedro run` subprocesses, one killed: `-m slow` (CI runs it)

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ["--pipeline", "training", "--params", "training.rl.tasks_per_update=1,environment.max_steps=6"]
"""``kedro run`` arguments: the training stage, at a quarter of conf/test's rollout work (one
task per update, episodes of at most 6 steps; the untrained policy plays every step)."""


def _harness():
    spec = importlib.util.spec_from_file_location("reliability_resume", ROOT / "benchmarks" / "reliability_resume.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


harness = _harness()


@pytest.fixture(scope="module")
def seeded_project(tmp_path_factory, tiny_policy) -> Path:
    """A project copy holding the training pipeline's inputs, one version each."""
    path = tmp_path_factory.mktemp("kill_resume")
    harness.KedroProject(path)
    version = Version(None, generate_timestamp())
    for name in ("stage1_policy", "base_policy"):
        ModelDirectoryDataset(path=str(path / "data" / "06_models" / name), version=version).save(tiny_policy)
    skills = path / "data" / "04_feature" / "skills.parquet" / version.save / "skills.parquet"
    skills.parent.mkdir(parents=True)
    skills_table([]).to_parquet(skills)
    return path


@pytest.fixture(scope="module")
def uninterrupted(seeded_project):
    os.environ.setdefault("HINDSIGHT_TORCH_THREADS", "1")
    attempt = harness.kedro_run(seeded_project, TRAINING)
    assert attempt.returncode == 0, attempt.log[-4000:]
    return harness.final_outcome(seeded_project)


def test_a_run_killed_after_its_first_checkpoint_resumes_identically(seeded_project, uninterrupted, tiny_policy, tmp_path):
    harness.clear_checkpoints(seeded_project)
    killed = harness.kedro_run(seeded_project, TRAINING, harness.after_checkpoint(seeded_project, 1))
    assert killed.killed_at is not None, "the run finished before its first checkpoint was seen"
    (run_dir,) = harness._checkpoint_runs(seeded_project)
    assert latest_checkpoint(run_dir).name == "update_000001"

    rerun = harness.kedro_run(seeded_project, TRAINING)
    assert rerun.returncode == 0, rerun.log[-4000:]
    assert harness._resumed_from(rerun.log) == "resumed at update 1"
    assert harness.compare(harness.final_outcome(seeded_project), uninterrupted) == "identical"

    start = ModelDirectoryDataset(path=str(tmp_path / "start"), version=Version(None, generate_timestamp()))
    start.save(tiny_policy)
    assert harness.weights_digest(Path(start._get_load_path())) != uninterrupted.weights  # training changed the weights
    assert len(uninterrupted.history) == 2


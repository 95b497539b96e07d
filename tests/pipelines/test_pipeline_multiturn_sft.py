"""``rollout.layout: multiturn`` through ``KedroSession``: behaviour cloning and Stage 1 train
on whole-episode sequences (``training.episode_sft``), the analyzer pairs stay (prompt,
response) rows, and the versioned examples are readable text; plus the Stage-1 mixture node
on both layouts (the step-wise one keeps its three columns)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from kedro_project import KedroProject
from hindsight.config import Stage1Config
from hindsight.pipelines.stage1.nodes import stage1_examples
from hindsight.training.episode_sft import MULTITURN_COLUMNS

MULTITURN = {
    "rollout": {"layout": "multiturn"},
    "skills": {"validation": {"enabled": False}},
    "stage1": {"premise_tasks_per_game": 0},
}
"""Merged into conf/test's blocks (the other keys stay); the checks this test does not read
(skill validation re-rollouts, the premise rollouts) are off to keep it short."""


@pytest.fixture(scope="module")
def multiturn_run(tmp_path_factory):
    project = KedroProject(tmp_path_factory.mktemp("multiturn_sft_project"))
    return project.run(pipeline_names=["ingestion", "behaviour_cloning", "skills", "stage1"], runtime_params=MULTITURN)


def test_behaviour_cloning_trains_on_episode_rows(multiturn_run):
    examples = pd.read_parquet(multiturn_run.outputs["05_model_input/bc_examples.parquet"])
    assert set(MULTITURN_COLUMNS) <= set(examples.columns)
    assert examples["sequence"].nunique() == examples["episode_id"].nunique()
    assert examples["header"].str.startswith("Task: ").all()
    assert examples["prompt"].str.startswith("Current observation: ").all()  # the turn's segment, no history block
    history = pd.read_parquet(multiturn_run.outputs["07_model_output/bc_history.parquet"])
    losses = history["loss"].tolist()
    assert losses and all(math.isfinite(loss) for loss in losses) and losses[-1] < losses[0]


def test_stage1_mixture_keeps_sequences_and_analyzer_pairs(multiturn_run):
    mixture = pd.read_parquet(multiturn_run.outputs["05_model_input/stage1_examples.parquet"])
    kinds = mixture.groupby("kind")
    assert set(kinds.groups) == {"bc", "skill_bc", "analyzer"}
    assert kinds.get_group("analyzer")["header"].isna().all()
    skill_bc = kinds.get_group("skill_bc")
    assert skill_bc["header"].str.contains("**Episode-Level Skill**", regex=False).all()
    assert skill_bc["sequence"].str.startswith("skill_bc/").all()
    history = pd.read_parquet(multiturn_run.outputs["07_model_output/stage1_history.parquet"])
    assert len(history) and history["loss"].map(math.isfinite).all()


def test_stepwise_mixture_keeps_its_columns():
    bc = pd.DataFrame({"episode_id": ["e1"], "step": [0], "prompt": ["Task: t\nYour turn.\n"], "response": ["look"], "kind": ["bc"]})
    skills = pd.DataFrame({"episode_id": ["e1"], "skill": ["do: look"], "accepted": [True], "parse_ok": [True]})
    analyzer = pd.DataFrame({"prompt": ["Analyse.\n"], "response": ["do: look"], "episode_id": ["e1"], "held_out": [False]})
    mixture = stage1_examples(bc, skills, analyzer, Stage1Config())
    assert list(mixture.columns) == ["prompt", "response", "kind"]
    assert mixture["kind"].tolist() == ["bc", "skill_bc", "analyzer"]

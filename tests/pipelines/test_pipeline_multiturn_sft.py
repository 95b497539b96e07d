"""``rollout.layout: multiturn`` through ``KedroSession``: behaviour cloning and Stage 1 train
on whole-episode sequences (``training.episode_sft``), the analyzer pairs stay (prompt,
response) rows, and the versioned examples are readable text; plus the Stage-1 mixture node
on both layouts (the step-wise one keeps its three columns)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from kedro_project import KedroProject
from hindsight.config import ProjectConfig, Stage1Config
from hindsight.pipelines.stage1.nodes import own_rollout_examples, stage1_examples
from hindsight.training.episode_sft import MULTITURN_COLUMNS

pytestmark = pytest.mark.pipeline

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
    mixture = stage1_examples(bc, bc.iloc[:0], skills, analyzer, Stage1Config())
    assert list(mixture.columns) == ["prompt", "response", "kind"]
    assert mixture["kind"].tolist() == ["bc", "skill_bc", "analyzer"]


def _rollout_table(won: list[bool]) -> pd.DataFrame:
    """One-step skills-stage rollouts of a train task, won as given."""
    return pd.DataFrame(
        [
            {"episode_id": f"r{i}", "group_id": "g", "env": "textworldexpress", "task_type": "twc", "task": "Tidy up.",
             "split": "train", "seed": 0, "step": 0, "observation": "A room.", "anchor_observation": "A room.",
             "valid_actions": ["take x", "look"], "action": "take x", "response": "take x", "reward": 10.0 * w,
             "score": float(w), "done": True, "won": w, "action_valid": True, "source": "rollout", "policy_version": 0}
            for i, w in enumerate(won)
        ]
    )


def test_own_won_rollouts_join_the_mixture_only_with_their_skill():
    project = ProjectConfig()
    rollouts = _rollout_table([True, False])
    assert own_rollout_examples(rollouts, project, Stage1Config()).empty  # off by default
    assert own_rollout_examples(_rollout_table([False]), project, Stage1Config(own_rollout_repeat=2)).empty
    own = own_rollout_examples(rollouts, project, Stage1Config(own_rollout_repeat=2))
    assert own["episode_id"].tolist() == ["r0"]  # the won one only
    bc = pd.DataFrame({"episode_id": ["e1"], "step": [0], "prompt": ["Task: t\nYour turn.\n"], "response": ["look"], "kind": ["bc"]})
    skills = pd.DataFrame({"episode_id": ["e1", "r0"], "skill": ["do: look", "do: take x"], "accepted": [True, True],
                           "parse_ok": [True, True]})
    analyzer = pd.DataFrame({"prompt": ["Analyse.\n"], "response": ["do: look"], "episode_id": ["e1"], "held_out": [False]})
    mixture = stage1_examples(bc, own, skills, analyzer, Stage1Config(own_rollout_repeat=2))
    assert mixture["kind"].tolist() == ["bc", "skill_bc", "own_skill_bc", "own_skill_bc", "analyzer"]
    own_rows = mixture[mixture["kind"] == "own_skill_bc"]
    assert own_rows["prompt"].str.contains("[do: take x]", regex=False).all() and (own_rows["response"] == "take x").all()
    with pytest.raises(ValueError, match="own_rollout_repeat"):
        Stage1Config(own_rollout_repeat=-1)


def test_repeated_multiturn_copies_stay_separate_sequences():
    own = pd.DataFrame({"episode_id": ["r0", "r0"], "sequence": ["r0", "r0"], "step": [0, 1], "header": ["Task: t", "Task: t"],
                        "valid_actions": [["take x"], ["look"]], "prompt": ["Current observation: a", "Current observation: b"],
                        "response": ["take x", "look"], "kind": ["bc", "bc"]})
    bc = own.iloc[:0]
    skills = pd.DataFrame({"episode_id": ["r0"], "skill": ["do: take x"], "accepted": [True], "parse_ok": [True]})
    analyzer = pd.DataFrame({"prompt": ["Analyse.\n"], "response": ["do: take x"], "episode_id": ["r0"], "held_out": [True]})
    mixture = stage1_examples(bc, own, skills, analyzer, Stage1Config(own_rollout_repeat=2))
    assert mixture["sequence"].tolist() == ["own_skill_bc0/skill_bc/r0"] * 2 + ["own_skill_bc1/skill_bc/r0"] * 2
    assert mixture["header"].str.contains("do: take x", regex=False).all()

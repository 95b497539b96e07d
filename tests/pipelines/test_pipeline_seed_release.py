"""The SEED release preset (``conf/seed_release``) end to end, sized down: its settings that
make it the release (JSON skills from the whole trajectory, no "name objects by role",
Stage 1 = analyzer SFT on every parsed teacher skill with the filter off, the entropy term,
the release's step score) laid over the test configuration, on the pretrained route with a
tiny GGUF model (``tiny_gguf``), through every stage: ingestion, behaviour cloning, skills,
Stage 1 with the premise check, SEED, evaluation.

Sized down for 2 cores: the test configuration's budgets, and answers of at most 48 tokens
instead of the release's 4096 (a tiny untrained model writes until it stops or runs out);
the prompt caps stay the preset's, so the analysis prompt carries the whole trajectory.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from kedro_project import KedroProject
from tiny_gguf import write_tiny_gguf

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]  # a whole pipeline on a converted model: `-m slow` (CI runs it)

PRESET = yaml.safe_load((Path(__file__).resolve().parents[2] / "conf" / "seed_release" / "parameters.yml").read_text())
LORA = {"rank": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"], "last_layers": 1}


def release_run() -> dict:
    """The preset's release settings over the test configuration's sizes."""
    preset_skills = PRESET["skills"]
    return {
        "analyzer": {**PRESET["analyzer"], "max_new_tokens": 48},
        "behaviour_cloning": {"policy": {"from_pretrained_model": True, "lora": LORA}},
        "skills": {key: preset_skills[key] for key in ("validation", "analyzer_sft_from", "analyzer_heldout_fraction")},
        "stage1": {"behaviour_cloning": PRESET["stage1"]["behaviour_cloning"]},
        "training": {"rl": {"entropy_coef": PRESET["training"]["rl"]["entropy_coef"],
                            "methods": {"seed": {"step_score": PRESET["training"]["rl"]["methods"]["seed"]["step_score"]}}}},
        "evaluation": {"heldout": {"episodes_per_game": 1, "splits": ["seen"], "decodings": {"sampled": {"temperature": 0.4}}}},
    }


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("seed_release")
    source = root / "tiny.gguf"
    write_tiny_gguf(source)
    project = KedroProject(root / "project")
    project.run(pipeline_names=["pretrained_model"], runtime_params={"pretrained_model": {"gguf_path": str(source)}})
    return project.run(runtime_params=release_run())


def test_stage1_trains_the_analyzer_only_on_whole_trajectories(release):
    examples = pd.read_parquet(release.outputs["05_model_input/stage1_examples.parquet"])
    assert set(examples["kind"]) == {"analyzer"}  # no behaviour-cloning rows
    pairs = pd.read_parquet(release.outputs["05_model_input/analyzer_sft_set.parquet"])
    trajectories = pd.read_parquet(release.outputs["03_primary/trajectories.parquet"])
    steps = trajectories.groupby("episode_id")["action"].apply(list)
    expert = pairs[pairs["episode_id"].isin(steps.index)]
    assert len(expert) > 0
    for row in expert.itertuples():
        assert all(action in row.prompt for action in steps[row.episode_id]), row.episode_id  # the whole trajectory
    assert not expert["prompt"].str.contains("by their role").any()


def test_seed_trains_with_the_entropy_term(release):
    """Every update carries the entropy term. The tiny untrained model's JSON skills do not
    parse in 48 tokens (parse rate 0 here, so no distillation term): the preset's distillation
    needs a model that writes JSON (the pretrained route's SmolLM2)."""
    history = pd.read_parquet(release.outputs["07_model_output/training_history.parquet"])
    assert len(history) == 2 and (history["losses/entropy"] > 0).all()
    assert len(pd.read_csv(release.outputs["08_reporting/evaluation_summary.csv"])) > 0

"""``kedro run --pipeline empo`` on GUI trajectories with no browser: ingestion (gold episodes
of the toy form that renders its screen, ``tests/toy_screens.py``, plus a GUI trajectory
file), behaviour cloning, then EMPO on the ingested GUI trajectories. The trajectories the
run replays read as GUI trajectories (matched by ``envs.miniwob.action_match``), the
mechanism ran (matches and patches, finite losses, semi-online evaluations), and the
replayed steps' rewards are those of the GUI rule."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from hindsight.envs import registry
from hindsight.envs.expert_replay import expert_trajectories

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

DATA = Path(__file__).resolve().parents[1] / "data"
PARAMS = {
    "environment": {"env": "toy_screens", "max_steps": 4, "games": [{"game": "enter-word"}]},
    "ingestion": {
        "expert_episodes": {"train": 8, "dev": 0, "test": 0},
        "external_files": [{"path": "data/01_raw/gui_episodes.jsonl", "format": "gui"}],
    },
    "empo": {"rl": {"algorithm": "empo", "updates": 2, "tasks_per_update": 3, "group_size": 2, "eval_every": 1}},
}
EMPO_REWARDS = {round(0.1 + 0.9 * score, 6) for score in (0.0, 0.1, 0.5, 1.0)} | {round(0.9 * s, 6) for s in (0.0, 0.1, 0.5, 1.0)}


@pytest.fixture(scope="module")
def toy_family():
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(registry.ENV_FAMILIES, "toy_screens", ("toy_screens", "FormScreen"))
        yield


def test_empo_pipeline_on_gui_trajectories_without_a_browser(tmp_path, toy_family):
    project = KedroProject(tmp_path / "project")
    raw = project.path / "data" / "01_raw"
    shutil.copy(DATA / "examples" / "gui_episodes.jsonl", raw)
    shutil.copytree(DATA / "examples" / "gui_screens", raw / "gui_screens")
    record = project.run(pipeline_names=["ingestion", "behaviour_cloning", "empo"], runtime_params=PARAMS)
    trajectories = pd.read_parquet(record.outputs["03_primary/trajectories.parquet"])
    replayed = expert_trajectories(trajectories[trajectories["source"] == "expert"])
    assert len(replayed) == 10 and all(t.gui for t in replayed)  # 8 gold episodes and the file's 2
    history = pd.read_parquet(record.outputs["07_model_output/empo_history.parquet"])
    trained = history[history["update"] > 0]
    assert len(trained) == 2 and trained["losses/total"].map(math.isfinite).all()
    assert (trained["empo/match_rate"] + trained["empo/patch_rate"]).gt(0).all()
    rollout = pd.read_parquet(record.outputs["07_model_output/empo_last_rollout.parquet"])
    assert set(rollout["env"]) == {"expert_replay"} and set(rollout["source"]) <= {"rollout", "patched"}
    assert set(rollout["reward"].round(6)) <= EMPO_REWARDS
    semi_online = pd.read_parquet(record.outputs["07_model_output/empo_semi_online.parquet"])
    assert semi_online["update"].tolist() == [0, 1, 2] and semi_online["semi_online/trajectories"].gt(0).all()

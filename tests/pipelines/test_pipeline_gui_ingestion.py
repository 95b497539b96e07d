"""GUI data through real Kedro sessions: the ingestion pipeline on a game that renders its
screen (the toy form of ``tests/toy_screens.py``, registered as the family ``toy_screens``)
plus a GUI trajectory file, and every malformed GUI file of ``tests/data/malformed/gui``.

The good run writes the versioned ``screenshots`` dataset beside the trajectory tables (same
version): a screen for every expert step and every step of the file, keyed by episode and
step, and no image bytes in any trajectory table. Each bad file stops the run naming the
file, the line and the field, and no dataset version is written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hindsight.data.schema import SCREENSHOT_COLUMNS, TrajectoryValidationError
from hindsight.data.screenshots import screenshot_of, validate_screenshots
from hindsight.envs import registry

from kedro_project import KedroProject
from toy_screens import FormScreen

pytestmark = pytest.mark.pipeline

DATA = Path(__file__).resolve().parents[1] / "data"
MALFORMED_GUI = DATA / "malformed" / "gui"
SCREENSHOTS = "03_primary/screenshots.parquet"
TRAJECTORIES = "03_primary/trajectories.parquet"
TOY_GAME = {"environment": {"env": "toy_screens", "max_steps": 4, "games": [{"game": "enter-word"}]}}
GUI_FILE = {"path": "data/01_raw/gui_episodes.jsonl", "format": "gui"}


def params(external_files: list, expert_train: int = 3) -> dict:
    return {**TOY_GAME, "ingestion": {"expert_episodes": {"train": expert_train, "dev": 0, "test": 0}, "external_files": external_files}}


@pytest.fixture(scope="module")
def toy_family():
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(registry.ENV_FAMILIES, "toy_screens", ("toy_screens", "FormScreen"))
        yield


@pytest.fixture(scope="module")
def gui_run(tmp_path_factory, toy_family):
    project = KedroProject(tmp_path_factory.mktemp("gui_ingestion"))
    raw = project.path / "data" / "01_raw"
    shutil.copy(DATA / "examples" / "gui_episodes.jsonl", raw)
    shutil.copytree(DATA / "examples" / "gui_screens", raw / "gui_screens")
    shutil.copytree(MALFORMED_GUI, raw / "malformed_gui")
    return project, project.run(pipeline_names=["ingestion"], runtime_params=params([GUI_FILE]))


def test_screens_are_a_versioned_dataset_beside_the_steps(gui_run):
    _, record = gui_run
    assert record.outputs[SCREENSHOTS].parent.name == record.outputs[TRAJECTORIES].parent.name  # one version
    steps = pd.read_parquet(record.outputs[TRAJECTORIES])
    screenshots = validate_screenshots(pd.read_parquet(record.outputs[SCREENSHOTS]), "screenshots", steps=steps)
    assert sorted(zip(screenshots["episode_id"], screenshots["step"])) == sorted(zip(steps["episode_id"], steps["step"]))
    assert len(steps) == 3 * 2 + 4  # 3 gold episodes of 2 steps, and the file's 2 episodes of 2 steps
    assert record.mlflow_run.data.metrics["ingestion/screenshots"] == len(screenshots) == 10


def test_the_expert_screens_are_the_pages_played_on(gui_run):
    _, record = gui_run
    screenshots = pd.read_parquet(record.outputs[SCREENSHOTS])
    env = FormScreen()
    env.reset(1)
    np.testing.assert_array_equal(screenshot_of(screenshots, "toy_screens/enter-word/train/1/expert", 0), env.screenshot())


def test_no_table_that_passes_steps_along_holds_image_bytes(gui_run):
    _, record = gui_run
    for dataset in ("expert_trajectories", "external_trajectories", "trajectories", "episode_summary"):
        table = pd.read_parquet(record.outputs[f"03_primary/{dataset}.parquet"])
        assert not [name for name in table.columns if table[name].map(lambda v: isinstance(v, bytes)).any()], dataset
        assert "pixels" not in table.columns


@pytest.mark.parametrize("name", sorted(path.name for path in MALFORMED_GUI.glob("*.jsonl")))
def test_a_malformed_gui_file_stops_the_run_and_writes_nothing(gui_run, name):
    project, _ = gui_run
    before = {dataset: project.versions(dataset) for dataset in (SCREENSHOTS, TRAJECTORIES, "03_primary/external_trajectories.parquet")}
    entry = {"path": f"data/01_raw/malformed_gui/{name}", "format": "gui"}
    with pytest.raises(TrajectoryValidationError) as failure:
        project.run(
            pipeline_names=["ingestion"], runtime_params=params([GUI_FILE, entry], expert_train=1),
            from_nodes=["ingestion.load_external_trajectories"],
        )
    message = str(failure.value)
    assert f"malformed_gui/{name}, line " in message and ", field 'steps[0]" in message, message
    assert {dataset: project.versions(dataset) for dataset in before} == before
    assert project.last_record.outputs == {}


def test_a_text_game_writes_an_empty_screenshot_table(gui_run):
    """conf/test's text games (the default route's family) give steps and no screen."""
    project, _ = gui_run
    record = project.run(pipeline_names=["ingestion"], runtime_params={"ingestion": {"expert_episodes": {"train": 1}}})
    screenshots = pd.read_parquet(record.outputs[SCREENSHOTS])
    assert screenshots.empty and list(screenshots.columns) == list(SCREENSHOT_COLUMNS)
    assert len(pd.read_parquet(record.outputs[TRAJECTORIES])) > 0

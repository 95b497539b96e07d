"""GUI trajectory files (``hindsight.data.gui_trajectories``): the example file becomes the
rows and screens the environment would give, and each malformed file of
``tests/data/malformed/gui`` stops with a message naming the file, the line and the field."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hindsight.config import IngestionConfig
from hindsight.data.external_files import ExternalFile, as_external_file, load_external_file
from hindsight.data.gui_trajectories import load_gui_trajectories
from hindsight.data.gui_view import element_boxes
from hindsight.data.schema import TrajectoryValidationError
from hindsight.data.screenshots import screenshot_of
from hindsight.envs.reward import RewardConfig
from hindsight.params import ParameterError, build

from toy_screens import FormScreen

pytestmark = pytest.mark.unit

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE / "examples" / "gui_episodes.jsonl"
MALFORMED_GUI = HERE / "malformed" / "gui"

EXPECTED_ERRORS = {
    "missing_image.jsonl": ("line 2", "field 'steps[0].screenshot'", "no such image file", "nowhere.png"),
    "unreadable_image.jsonl": ("line 1", "field 'steps[0].screenshot'", "unreadable image", "broken.png"),
    "image_outside_folder.jsonl": ("line 1", "field 'steps[0].screenshot'", "outside the image folder"),
    "click_outside.jsonl": ("line 2", "field 'steps[0].action.x'", "x=160 lies outside the 160x210 screen"),
    "unknown_action.jsonl": ("line 1", "field 'steps[0].action.type'", "unknown action type 'scroll'"),
    "unknown_ref.jsonl": ("line 1", "field 'steps[0].action.ref'", "no element with ref 9"),
    "type_into_button.jsonl": ("line 1", "field 'steps[0].action'", "takes no text"),
}


def test_every_malformed_gui_file_has_an_expectation():
    assert {path.name for path in MALFORMED_GUI.glob("*.jsonl")} == set(EXPECTED_ERRORS)


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_a_malformed_gui_file_names_file_line_and_field(name):
    with pytest.raises(TrajectoryValidationError) as error:
        load_gui_trajectories(MALFORMED_GUI / name)
    message = str(error.value)
    assert message.startswith(str(MALFORMED_GUI / name) + ", line "), message
    for piece in EXPECTED_ERRORS[name]:
        assert piece in message, f"{piece!r} not in {message!r}"


@pytest.fixture(scope="module")
def example():
    return load_gui_trajectories(EXAMPLE, reward=RewardConfig(success_reward=1.0))


def test_the_example_becomes_steps_and_their_screens(example):
    table, screenshots = example
    assert table["episode_id"].tolist() == ["form-apple"] * 2 + ["phone-wifi"] * 2
    assert table["action"].tolist() == ['type [3] "apple"', "click [4]", "click 60 52", "press Enter"]
    assert table["group_id"].tolist()[:2] == ["toy_screens/enter-word/train/0"] * 2
    assert table["group_id"].iloc[2] == "phone/settings/train/2"  # no seed: the line number
    assert table["reward"].tolist() == [0.0, 1.0, 0.0, 1.0] and table["won"].tolist() == [False, True, False, True]
    assert table.attrs["outcome_assumed_episodes"] == 1  # phone-wifi states no success
    assert set(table["source"]) == {"expert"} and set(table["policy_version"]) == {-1}
    assert list(zip(screenshots["episode_id"], screenshots["step"])) == list(zip(table["episode_id"], table["step"]))
    for row in screenshots.itertuples(index=False):
        path = EXAMPLE.parent / "gui_screens" / f"{row.episode_id}-{row.step}.png"
        np.testing.assert_array_equal(screenshot_of(screenshots, row.episode_id, row.step), np.asarray(Image.open(path).convert("RGB")))
    assert screenshots[["width", "height"]].values.tolist() == [[160, 210]] * 2 + [[120, 200]] * 2


def test_a_recorded_miniwob_page_reads_as_the_environment_shows_it(example):
    """The recorded form is the toy environment's page: same view, same valid actions."""
    table, _ = example
    env = FormScreen()
    view, info = env.reset(0)
    assert table["observation"].iloc[0] == table["anchor_observation"].iloc[0] == view
    played = ['type [3] "apple"', "click [4]"]
    assert set(table["valid_actions"].iloc[0]) >= set(played) and "press Enter" in table["valid_actions"].iloc[0]
    assert element_boxes(view) == {3: (10, 60, 120, 20), 4: (10, 95, 60, 22), 5: (80, 95, 60, 22)}
    observation, *_ = env.step(played[0])
    assert 'value="apple"' in table["observation"].iloc[1] and table["observation"].iloc[1] == observation


def test_another_screen_size_keeps_its_elements(example):
    table, _ = example
    view = table["observation"].iloc[2]
    assert view.splitlines() == [
        "Instruction: Turn on Wi-Fi.",
        '[1] TextView "Settings" @(0,0,120,25)',
        '[2] Switch "Wi-Fi" @(6,40,108,25)',
        '[3] Switch "Bluetooth" @(6,72,108,25)',
    ]
    assert table["valid_actions"].iloc[2] == ["click [1]", "click [2]", "click [3]"]


def test_the_image_folder_may_live_elsewhere(tmp_path):
    shutil.copytree(EXAMPLE.parent / "gui_screens", tmp_path / "images" / "gui_screens")
    moved = tmp_path / "episodes.jsonl"
    shutil.copy(EXAMPLE, moved)
    entry = ExternalFile(path=str(moved), format="gui", images=str(tmp_path / "images"))
    table, screenshots = load_external_file(entry)
    assert len(table) == len(screenshots) == 4
    with pytest.raises(TrajectoryValidationError, match=r"line 1, field 'steps\[0\].screenshot': no such image file"):
        load_external_file(ExternalFile(path=str(moved), format="gui"))  # default: the file's own folder


def test_a_plain_path_entry_reads_the_auto_formats_with_no_screens():
    table, screenshots = load_external_file(str(HERE / "examples" / "messages.jsonl"))
    assert len(table) > 0 and screenshots.empty
    assert as_external_file("a.jsonl") == ExternalFile(path="a.jsonl", format="auto")


@pytest.mark.parametrize(
    ("values", "message"),
    [({"path": "a.jsonl", "format": "csv"}, "format must be one of"), ({"format": "gui"}, "'path'"),
     ({"path": "", "format": "gui"}, "'path' must name a file"), ({"path": "a.jsonl", "images": "screens"}, "format gui only")],
)
def test_an_entry_is_checked_where_the_settings_are_built(values, message):
    with pytest.raises(ParameterError, match=message):
        build(IngestionConfig, {"external_files": ["plain.jsonl", values]}, "ingestion")


def test_settings_take_paths_and_mappings():
    settings = build(IngestionConfig, {"external_files": ["plain.jsonl", {"path": "gui.jsonl", "format": "gui"}]}, "ingestion")
    assert settings.external_files == ["plain.jsonl", ExternalFile(path="gui.jsonl", format="gui")]


def write_episode(tmp_path, **changes) -> Path:
    record = json.loads(EXAMPLE.read_text().splitlines()[0])
    for key, value in changes.items():
        record[key] = value
    shutil.copytree(EXAMPLE.parent / "gui_screens", tmp_path / "gui_screens", dirs_exist_ok=True)
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"goal": ""}, r"line 1, field 'goal': must not be empty"),
        ({"split": "validation"}, r"line 1, field 'split': 'validation' must be one of"),
        ({"steps": []}, r"line 1, field 'steps': an episode needs at least one step"),
        ({"seed": "7"}, r"line 1, field 'seed': expected an integer, got str"),
        ({"success": "yes"}, r"line 1, field 'success': expected true or false"),
    ],
)
def test_episode_fields_are_checked(tmp_path, changes, where):
    with pytest.raises(TrajectoryValidationError, match=where):
        load_gui_trajectories(write_episode(tmp_path, **changes))


def test_step_fields_are_checked(tmp_path):
    record = json.loads(EXAMPLE.read_text().splitlines()[0])
    step = record["steps"][1]
    cases = [
        ({**step, "elements": [{**step["elements"][0], "box": [1, 2, 3]}]}, r"field 'steps\[0\].elements\[0\].box': expected 4"),
        ({**step, "elements": step["elements"] + [step["elements"][0]]}, r"field 'steps\[0\].elements\[3\].ref': ref 3 appears twice"),
        ({**step, "action": {"type": "click", "x": 5}}, r"field 'steps\[0\].action.y': a click by coordinates needs both"),
        ({**step, "action": {"type": "click"}}, r"field 'steps\[0\].action': a click needs an element"),
        ({**step, "action": {"type": "press", "key": "Hyper"}}, r"field 'steps\[0\].action.key': unknown key"),
        ({**step, "action": {"type": "type", "text": "x"}}, r"field 'steps\[0\].action.ref': missing"),
        ({key: value for key, value in step.items() if key != "action"}, r"field 'steps\[0\].action': missing"),
    ]
    for bad_step, where in cases:
        with pytest.raises(TrajectoryValidationError, match=where):
            load_gui_trajectories(write_episode(tmp_path, steps=[bad_step]))


def test_an_episode_id_twice_names_both_lines(tmp_path):
    path = write_episode(tmp_path)
    path.write_text(path.read_text() * 2)
    with pytest.raises(TrajectoryValidationError, match=r"line 2, field 'episode_id': 'form-apple' is also the episode of line 1"):
        load_gui_trajectories(path)


def test_a_line_of_bad_json_is_named(tmp_path):
    path = write_episode(tmp_path)
    path.write_text(path.read_text() + '{"episode_id": \n')
    with pytest.raises(TrajectoryValidationError, match=re.escape(f"{path}, line 2: invalid JSON")):
        load_gui_trajectories(path)

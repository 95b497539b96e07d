"""GUI trajectory files checked as strictly as text ones (``hindsight.data.gui_trajectories``).

Each file of ``tests/data/malformed/gui_strict`` was once read without a word (a misspelt
``"sucess": false`` ingested as won, a screenshot at twice MiniWoB's size, steps repeated or
reordered, a click whose element and point disagree, a train seed labelled test) or with
Pillow's bare ``DecompressionBombError``. Now each stops with a message naming the file, the
line and the field, and nothing is written: not by a caller that saves what it read, and not
by the ingestion pipeline's nodes run through a Kedro ``DataCatalog`` of the project's own
versioned datasets. The text formats refuse unknown keys the same way.
"""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import pandas as pd
import pytest
import yaml
from kedro.io import DataCatalog
from kedro.runner import SequentialRunner
from PIL import Image

from hindsight.config import IngestionConfig, ProjectConfig
from hindsight.data.external import load_external_trajectories
from hindsight.data.gui_trajectories import load_gui_trajectories
from hindsight.data.schema import TRAJECTORY_COLUMNS, TrajectoryValidationError
from hindsight.params import build
from hindsight.pipelines.ingestion.pipeline import create_pipeline

pytestmark = pytest.mark.unit

HERE = Path(__file__).resolve().parent
STRICT = HERE / "malformed" / "gui_strict"
PROJECT_ROOT = HERE.parents[1]

EXPECTED = {
    "misspelt_success.jsonl": ("line 2", "sucess", 'unknown key "sucess": did you mean "success"?'),
    "misspelt_step_key.jsonl": ("line 1", "steps[0].screenshoot", 'did you mean "screenshot"?'),
    "misspelt_element_key.jsonl": ("line 1", "steps[0].elements[0].bbox", 'did you mean "box"?'),
    "text_on_a_click.jsonl": ("line 1", "steps[0].action.text", 'a click action does not carry "text"'),
    "twice_miniwob_size.jsonl": ("line 1", "steps[0].screenshot", "320x420 pixels, but a 'miniwob' screen is 160x210"),
    "declared_screen_mismatch.jsonl": ("line 1", "steps[0].screenshot", "160x210 pixels, but the episode declares its screen"),
    "decompression_bomb.jsonl": ("line 1", "steps[0].screenshot", "decompression bomb: "),
    "duplicated_step.jsonl": ("line 1", "steps[1].step", "steps[1] says step 0: a duplicated or out-of-order step"),
    "out_of_order_steps.jsonl": ("line 1", "steps[0].step", "steps[0] says step 1"),
    "ref_and_point_disagree.jsonl": ("line 2", "steps[0].action", "ref and point disagree: the click at (110, 106)"),
    "train_seed_labelled_test.jsonl": ("line 1", "seed", "seed 7 is a train seed of 'miniwob'"),
}


def ingest(path: Path, out: Path, **options) -> None:
    """Read a GUI file and save what it gave, as a caller does (the folder only once read)."""
    table, screenshots = load_gui_trajectories(path, **options)
    out.mkdir()
    table.to_parquet(out / "trajectories.parquet")
    screenshots.to_parquet(out / "screenshots.parquet")


def refused(path: Path, out: Path, **options) -> str:
    """The message of a file that is refused; nothing written under ``out``."""
    with pytest.raises(TrajectoryValidationError) as error:
        ingest(path, out, **options)
    assert not out.exists()
    return str(error.value)


def test_every_strict_case_has_an_expectation():
    assert {path.name for path in STRICT.glob("*.jsonl")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_case_names_file_line_and_field_and_writes_nothing(name, tmp_path):
    line, field, piece = EXPECTED[name]
    message = refused(STRICT / name, tmp_path / "out")
    assert message.startswith(f"{STRICT / name}, {line}, field {field!r}: "), message
    assert piece in message, message


def test_a_misspelt_outcome_never_falls_back_to_assume_success(tmp_path):
    message = refused(STRICT / "misspelt_success.jsonl", tmp_path / "out", assume_success=True)
    assert "did you mean" in message
    good, bad = (json.loads(line) for line in (STRICT / "misspelt_success.jsonl").read_text().splitlines())
    bad["success"] = bad.pop("sucess")  # spelt right, the failure stays a failure
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    shutil.copytree(STRICT / "screens", tmp_path / "screens")
    table, _ = load_gui_trajectories(fixed, assume_success=True)
    assert table.groupby("episode_id")["won"].any().to_dict() == {"good-1": True, "bad-2": False}
    assert table.attrs["outcome_assumed_episodes"] == 0


def test_the_bomb_is_never_decoded_even_with_pillows_guard_off(tmp_path, monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)
    message = refused(STRICT / "decompression_bomb.jsonl", tmp_path / "out")
    assert "field 'steps[0].screenshot': the image declares 14000x14000 pixels" in message and "not decoded" in message


def png_header(path: Path, width: int, height: int) -> None:
    """A PNG that declares ``width`` x ``height`` one-bit pixels, with one empty data chunk."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))


def episode(tmp_path: Path, *steps: dict, **fields) -> Path:
    """A one-line GUI file in ``tmp_path`` with the form's screens beside it."""
    record = {"episode_id": "e", "goal": "Press Submit.", "env": "miniwob", "task_type": "enter-text", "seed": 3, **fields}
    record["steps"] = list(steps)
    shutil.copytree(STRICT / "screens", tmp_path / "screens", dirs_exist_ok=True)
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


SUBMIT = {"ref": 4, "tag": "BUTTON", "text": "Submit", "box": [10, 95, 60, 22]}


def step(shot: str = "form-0.png", **action) -> dict:
    return {"screenshot": f"screens/{shot}", "elements": [SUBMIT], "action": action or {"type": "click", "ref": 4}}


@pytest.mark.parametrize(
    ("steps", "fields", "field", "piece"),
    [
        ([step(type="press", key="Enter", ref=4)], {}, "steps[0].action.ref", 'a press action does not carry "ref"'),
        ([step(type="click", ref=4, x=40, y=106, button="left")], {}, "steps[0].action.button", "unknown key"),
        ([step()], {"seed": 130_000}, "seed", "seed 130000 is in no fold of 'miniwob'"),
        ([step()], {"seed": None, "split": "test"}, "seed", "seed 1 (no seed given: the line number) is a train seed"),
        ([step()], {"screen": [320, 420]}, "screen", "320x420 is not the screen of 'miniwob', which is 160x210"),
        ([step()], {"env": "phone", "screen": [16000, 16000]}, "screen", "over the 16,777,216 pixels"),
        ([step(), step("form-twice.png")], {"env": "phone"}, "steps[1].screenshot", "first screenshot (steps[0].screenshot) is 160x210"),
        ([step("huge.png")], {"env": "phone"}, "steps[0].screenshot", "decompression bomb"),
    ],
)
def test_generated_cases(tmp_path, steps, fields, field, piece):
    png_header(tmp_path / "huge.png", 10_000, 10_000)  # between Pillow's warning and its error
    path = episode(tmp_path, *steps, **fields)
    shutil.copy(tmp_path / "huge.png", tmp_path / "screens" / "huge.png")
    message = refused(path, tmp_path / "out")
    assert message.startswith(f"{path}, line 1, field {field!r}: "), message
    assert piece in message, message


def test_what_agrees_is_read(tmp_path):
    """A click whose point lands on its element, numbered steps, a declared phone screen."""
    steps = [{**step(), "step": 0}, {**step("form-1.png", type="click", ref=4, x=40, y=106), "step": 1}]
    table, screenshots = load_gui_trajectories(episode(tmp_path, *steps, split="train"))
    assert table["action"].tolist() == ["click [4]", "click [4]"] and len(screenshots) == 2
    table, _ = load_gui_trajectories(episode(tmp_path, step(), env="phone", screen=[160, 210], seed=12, split="test"))
    assert table["group_id"].tolist() == ["phone/enter-text/test/12"]


def conversation(**extra) -> dict:
    turns = [{"role": "user", "content": "Your task is to boil water."}, {"role": "assistant", "content": "Action: go to kitchen"}]
    return {"messages": turns, **extra}


@pytest.mark.parametrize(
    ("record", "where", "piece"),
    [
        (conversation(sucess=False), "line 1, field 'sucess'", 'did you mean "success"?'),
        ({"messages": [{"role": "user", "contnet": "hi"}]}, "line 1, turn 0, field 'contnet'", 'did you mean "content"?'),
    ],
)
def test_text_conversations_refuse_unknown_keys(tmp_path, record, where, piece):
    path = tmp_path / "talk.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(TrajectoryValidationError) as error:
        load_external_trajectories(path, assume_success=True)
    assert str(error.value).startswith(f"{path}, {where}: ") and piece in str(error.value), str(error.value)


def test_agentinstruct_loss_marks_are_read(tmp_path):
    record = conversation(id="alfworld_3")
    record["messages"] = [{**turn, "loss": turn["role"] == "assistant"} for turn in record["messages"]]
    path = tmp_path / "talk.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert load_external_trajectories(path, assume_success=True)["won"].tolist() == [True]


def test_text_table_rows_refuse_unknown_keys(tmp_path, make_rows):
    rows = make_rows(steps=2)
    rows[1]["rewrd"] = 1.0
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(TrajectoryValidationError, match=rf"rows.jsonl, line 2, field 'rewrd': unknown key \"rewrd\": did you mean \"reward\"\?"):
        load_external_trajectories(path)
    table = pd.DataFrame(make_rows(steps=2)).assign(wonn=False)
    table.to_parquet(tmp_path / "rows.parquet")
    with pytest.raises(TrajectoryValidationError, match=r"rows.parquet, field 'wonn': unknown column \"wonn\": did you mean \"won\"\?"):
        load_external_trajectories(tmp_path / "rows.parquet")
    pd.DataFrame(make_rows(steps=2)).assign(response_logprobs=[[-0.1], [-0.2]]).to_parquet(tmp_path / "rollout.parquet")
    assert list(load_external_trajectories(tmp_path / "rollout.parquet").columns) == list(TRAJECTORY_COLUMNS)


VERSIONED = ("expert_trajectories", "external_trajectories", "trajectories", "screenshots", "episode_summary")


def test_the_ingestion_nodes_write_no_version_through_the_catalog(tmp_path):
    """The ingestion pipeline from its external-file node, run by Kedro's ``SequentialRunner``
    over the project's own catalog entries: a strict case stops it and no version is saved."""
    shutil.copytree(STRICT, tmp_path / "raw")
    entries = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "catalog.yml").read_text())
    config = {name: {**entries[name], "filepath": str(tmp_path / "out" / f"{name}.parquet")} for name in VERSIONED}
    catalog = DataCatalog.from_config(config)
    catalog["project_settings"] = ProjectConfig()
    catalog["ingestion_settings"] = build(IngestionConfig, {
        "expert_episodes": {"train": 0, "dev": 0, "test": 0},
        "external_files": [{"path": str(tmp_path / "raw" / "misspelt_success.jsonl"), "format": "gui"}],
    }, "ingestion")
    pipeline = create_pipeline().from_nodes("ingestion.load_external_trajectories")
    with pytest.raises(TrajectoryValidationError, match=r"misspelt_success.jsonl, line 2, field 'sucess': unknown key"):
        SequentialRunner().run(pipeline, catalog)
    assert not (tmp_path / "out").exists()

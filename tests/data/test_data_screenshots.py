"""The screenshot table: its columns and check, the catalog's versioned ``screenshots``
dataset (saved and loaded through a real Kedro ``DataCatalog`` built from the project's own
catalog entry), and the expert collection's screens (a toy form that renders its page, and a
text environment that renders none)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from kedro.io import DataCatalog

from hindsight.data.expert import collect_expert_episodes, collect_expert_trajectories
from hindsight.data.schema import SCREENSHOT_COLUMNS, TRAJECTORY_COLUMNS, TrajectoryValidationError, empty_screenshot_table
from hindsight.data.screenshots import (
    screen_of_row,
    screenshot_of,
    screenshot_row,
    screenshot_table,
    validate_screenshots,
)
from hindsight.envs import registry
from hindsight.envs.base import EnvironmentSpec

from toy_screens import SPEC, WORDS, FormScreen

pytestmark = pytest.mark.unit

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def screen(seed: int, height: int = 210, width: int = 160) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(height, width, 3), dtype=np.uint8)


def table_of(count: int = 3) -> pd.DataFrame:
    return screenshot_table(screenshot_row("e1", step, screen(step)) for step in range(count))


def test_the_table_has_the_schema_columns_and_round_trips_a_screen():
    table = table_of()
    assert list(table.columns) == list(SCREENSHOT_COLUMNS) == ["episode_id", "step", "pixels", "width", "height"]
    assert table["step"].tolist() == [0, 1, 2] and set(table["width"]) == {160} and set(table["height"]) == {210}
    np.testing.assert_array_equal(screenshot_of(table, "e1", 1), screen(1))
    assert screenshot_of(table, "e1", 7) is None and screenshot_of(table, "other", 0) is None
    row = table.iloc[2]
    np.testing.assert_array_equal(screen_of_row(row["pixels"], row["width"], row["height"]), screen(2))


def test_no_image_bytes_in_the_trajectory_columns():
    assert not [name for name, column in TRAJECTORY_COLUMNS.items() if column.kind == "bytes"]


def test_an_empty_table_keeps_its_columns():
    assert list(screenshot_table([]).columns) == list(SCREENSHOT_COLUMNS)
    assert empty_screenshot_table().empty


@pytest.mark.parametrize("bad", [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32), np.zeros((0, 4, 3), np.uint8)])
def test_a_row_refuses_what_is_not_an_rgb_screen(bad):
    with pytest.raises(ValueError, match="RGB uint8"):
        screenshot_row("e1", 0, bad)


def test_validation_names_row_and_field():
    table = table_of()
    table.loc[1, "pixels"] = table.loc[1, "pixels"][:-3]
    with pytest.raises(TrajectoryValidationError, match=r"shots.parquet, row 1, field 'pixels': 100,797 bytes"):
        validate_screenshots(table, "shots.parquet")
    twice = pd.concat([table_of(), table_of(1)], ignore_index=True)
    with pytest.raises(TrajectoryValidationError, match=r"row 3, field 'step': episode 'e1' step 0 has a screenshot already \(row 0\)"):
        validate_screenshots(twice, "shots")
    with pytest.raises(TrajectoryValidationError, match="missing field"):
        validate_screenshots(table_of().drop(columns=["width"]), "shots")
    zero = table_of()
    zero.loc[0, "height"] = 0
    with pytest.raises(TrajectoryValidationError, match=r"row 0, field 'height': 0 must be > 0"):
        validate_screenshots(zero, "shots")


def test_validation_against_the_steps_finds_a_screen_without_its_row(make_rows):
    steps = pd.DataFrame(make_rows(episode="e1", steps=2))
    assert len(validate_screenshots(table_of(2), "shots", steps=steps)) == 2
    with pytest.raises(TrajectoryValidationError, match=r"row 2, field 'episode_id': no trajectory row for episode 'e1' step 2"):
        validate_screenshots(table_of(3), "shots", steps=steps)


def catalog_entry() -> dict:
    return yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "catalog.yml").read_text())["screenshots"]


def test_the_catalog_dataset_is_versioned_zstd_parquet(tmp_path):
    entry = catalog_entry()
    assert entry["versioned"] is True and entry["save_args"] == {"compression": "zstd"}
    catalog = DataCatalog.from_config({"screenshots": {**entry, "filepath": str(tmp_path / "screenshots.parquet")}})
    table = table_of()
    catalog.save("screenshots", table)
    loaded = catalog.load("screenshots")
    pd.testing.assert_frame_equal(validate_screenshots(loaded, "catalog"), table)
    (written,) = (tmp_path / "screenshots.parquet").glob("*/screenshots.parquet")  # one version folder
    assert pq.ParquetFile(written).metadata.row_group(0).column(2).compression == "ZSTD"
    empty = DataCatalog.from_config({"screenshots": {**entry, "filepath": str(tmp_path / "empty.parquet")}})
    empty.save("screenshots", empty_screenshot_table())
    assert list(empty.load("screenshots").columns) == list(SCREENSHOT_COLUMNS)


class TextForm(FormScreen):
    """The same form, as a text environment: it renders no screen."""

    def screenshot(self):
        return None


@pytest.fixture()
def toy_families(monkeypatch):
    monkeypatch.setitem(registry.ENV_FAMILIES, "toy_screens", ("toy_screens", "FormScreen"))
    monkeypatch.setitem(registry.ENV_FAMILIES, "toy_text", (__name__, "TextForm"))


def test_expert_collection_keeps_the_screen_each_gold_action_was_played_on(toy_families):
    table, screenshots = collect_expert_episodes([SPEC], {"train": 3})
    assert len(screenshots) == len(table) == 6  # two gold steps per task
    assert list(zip(screenshots["episode_id"], screenshots["step"])) == list(zip(table["episode_id"], table["step"]))
    env = FormScreen()
    for seed in range(3):
        env.reset(seed)
        episode = table[table["seed"] == seed]["episode_id"].iloc[0]
        np.testing.assert_array_equal(screenshot_of(screenshots, episode, 0), env.screenshot())  # the empty field
        env.step(env.gold_actions()[0])
        after_typing = screenshot_of(screenshots, episode, 1)
        np.testing.assert_array_equal(after_typing, env.screenshot())
        assert not np.array_equal(after_typing, screenshot_of(screenshots, episode, 0))
    assert table["won"].sum() == 3 and WORDS[0] in table["action"].iloc[0]
    pd.testing.assert_frame_equal(collect_expert_trajectories([SPEC], {"train": 3}), table)  # the same steps


def test_a_text_environment_gives_an_empty_screenshot_table(toy_families):
    table, screenshots = collect_expert_episodes([EnvironmentSpec("toy_text", "enter-word", {}, max_steps=4)], {"train": 2})
    assert len(table) == 4 and screenshots.empty and list(screenshots.columns) == list(SCREENSHOT_COLUMNS)

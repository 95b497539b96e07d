"""Behaviour cloning of a policy that sees, through real Kedro sessions: the screens come from
the catalog's ``screenshots`` dataset, by episode and step, and no examples table holds them.

The good run plays the toy form of ``tests/toy_screens.py`` (registered as the family
``toy_screens``, a screen rendered per step): ingestion writes the gold steps and their
screens, ``behaviour_cloning.policy.vision: true`` builds the tiny policy with its screenshot
encoder, and every image that reaches the encoder's forward is the screen the dataset holds
for one of the expert steps (each step's own: they differ step to step). On conf/test's text
games the screenshots table is empty and the same setting is refused, naming the dataset.
"""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from hindsight.data.screenshots import screen_of_row
from hindsight.envs import registry
from hindsight.policy.model import load_policy
from hindsight.policy.screen_model import ScreenEncoder

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

SCREENSHOTS = "03_primary/screenshots.parquet"
BC_EXAMPLES = "05_model_input/bc_examples.parquet"
VISION_BC = {
    "behaviour_cloning": {
        "policy": {"preset": "tiny", "vocab_size": 300, "vision": True},
        "sft": {"learning_rate": 0.003, "batch_size": 4, "max_steps": 4, "max_length": 512, "log_every": 1, "bf16_autocast": False},
    },
}
TOY_GAME = {"environment": {"env": "toy_screens", "max_steps": 4, "games": [{"game": "enter-word"}]}}


@pytest.fixture(scope="module")
def toy_family():
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(registry.ENV_FAMILIES, "toy_screens", ("toy_screens", "FormScreen"))
        yield


@pytest.fixture(scope="module")
def vision_run(tmp_path_factory, toy_family):
    """(the run's record, every pixel batch the screenshot encoder read during it)."""
    seen: list[torch.Tensor] = []
    original = ScreenEncoder.forward

    def recording(self, pixel_values):
        seen.append(pixel_values.detach().clone())
        return original(self, pixel_values)

    project = KedroProject(tmp_path_factory.mktemp("vision_bc"))
    params = {**TOY_GAME, "ingestion": {"expert_episodes": {"train": 3, "dev": 0, "test": 0}}, **VISION_BC}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ScreenEncoder, "forward", recording)
        record = project.run(pipeline_names=["ingestion", "behaviour_cloning"], runtime_params=params)
    return record, seen


def _rows(batches: list[torch.Tensor]) -> set[bytes]:
    return {row.numpy().tobytes() for batch in batches for row in batch}


def test_the_encoder_reads_each_expert_steps_screen_from_the_dataset(vision_run):
    record, seen = vision_run
    screens = pd.read_parquet(record.outputs[SCREENSHOTS])
    examples = pd.read_parquet(record.outputs[BC_EXAMPLES])
    assert len(examples) == 6 and len(screens) == 6  # 3 gold episodes of 2 steps, a screen each
    policy = load_policy(record.outputs["06_models/base_policy"], device="cpu")
    assert policy.vision is not None
    expected = {}
    for row in screens.itertuples(index=False):
        pixels = policy.vision.image(screen_of_row(row.pixels, row.width, row.height), policy.model).pixels["pixel_values"]
        expected[(row.episode_id, row.step)] = pixels[0].numpy().tobytes()
    assert set(zip(examples["episode_id"], examples["step"])) == set(expected)
    assert len(set(expected.values())) == 6  # every step its own screen
    assert seen and _rows(seen) == set(expected.values())  # each forward's images: the steps' screens, all of them


def test_no_examples_table_holds_the_pixels(vision_run):
    record, _ = vision_run
    examples = pd.read_parquet(record.outputs[BC_EXAMPLES])
    assert not [name for name in examples.columns if examples[name].map(lambda v: isinstance(v, (bytes, bytearray))).any()]
    assert {"screenshot", "pixels"}.isdisjoint(examples.columns)


def test_the_loss_of_behaviour_cloning_is_logged(vision_run):
    record, _ = vision_run
    history = pd.read_parquet(record.outputs["07_model_output/bc_history.parquet"])
    assert history["step"].tolist() == [1, 2, 3, 4] and history["loss"].notna().all()


def test_a_policy_that_sees_is_refused_on_steps_without_screens(tmp_path):
    """conf/test's text games: ingestion writes an empty screenshots table; behaviour cloning of
    a policy that sees stops before training, naming the dataset."""
    project = KedroProject(tmp_path / "text")
    with pytest.raises(ValueError, match=r"'screenshots' holds no screen of any of the \d+ step examples") as failure:
        project.run(
            pipeline_names=["ingestion", "behaviour_cloning"],
            runtime_params={"ingestion": {"expert_episodes": {"train": 1, "dev": 0, "test": 0}}, **VISION_BC},
        )
    assert "behaviour_cloning.policy.vision: false" in str(failure.value)
    assert project.versions("06_models/base_policy") == []

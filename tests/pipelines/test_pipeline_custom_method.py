"""A method defined in this file joins the project in one class: REINFORCE with a
group-mean baseline, registered under a name of its own, trained through
``kedro run --pipeline training --env test`` by configuration alone
(``--params training.rl.algorithm=test_reinforce,training.rl.methods.test_reinforce.scale=2``).

Runs on a copy of the project the whole default pipeline trained.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from hindsight.methods import Method, register
from hindsight.training.method import episode_return_scores

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

SEEN: list[pd.DataFrame] = []
"""What the method computed, one frame per update: its rows' group, episode and advantage."""


@dataclass
class ReinforceSettings:
    """``training.rl.methods.test_reinforce``."""

    scale: float = 1.0
    """Multiplies every advantage."""


@register("test_reinforce")
class Reinforce(Method):
    """REINFORCE with a group-mean baseline: A = scale * (return - mean return of the group)."""

    Settings = ReinforceSettings

    def advantages(self, batch, rl, max_steps):
        scores = episode_return_scores(batch.table)
        baseline = pd.Series(scores.numpy()).groupby(batch.table["group_id"].to_numpy()).transform("mean")
        advantages = self.settings.scale * (scores - torch.tensor(baseline.to_numpy(), dtype=torch.float32))
        SEEN.append(batch.table[["group_id", "episode_id"]].assign(advantage=advantages.numpy(), score=scores.numpy()))
        return advantages


RUNTIME_PARAMS = {"training": {"rl": {"algorithm": "test_reinforce", "methods": {"test_reinforce": {"scale": 2.0}}}}}


@pytest.fixture(scope="module")
def reinforce_run(trained_project, tmp_path_factory):
    project = KedroProject.copy_of(trained_project[0], tmp_path_factory.mktemp("custom_method"))
    SEEN.clear()
    record = project.run(pipeline_names=["training"], runtime_params=RUNTIME_PARAMS)
    return project, record


def test_the_registered_method_trains_by_configuration_alone(reinforce_run):
    _, record = reinforce_run
    history = pd.read_parquet(record.outputs["07_model_output/training_history.parquet"])
    assert history["update"].tolist() == [1, 2]
    assert len(SEEN) == 2  # the loop asked this method for the advantages of each update
    assert history["losses/ppo"].notna().all()
    assert not [column for column in history.columns if column.startswith("opd/")]  # no skills, no distillation
    params = record.mlflow_run.data.params
    assert params["training.rl.algorithm"] == "test_reinforce"
    assert params["training.rl.methods.test_reinforce.scale"] == "2.0"


def test_its_advantages_are_the_scaled_group_centred_returns(reinforce_run):
    for frame in SEEN:
        per_episode = frame.drop_duplicates("episode_id")
        group_mean = per_episode.groupby("group_id")["score"].transform("mean")
        assert (per_episode["advantage"] - 2.0 * (per_episode["score"] - group_mean)).abs().max() < 1e-5
        assert per_episode.groupby("group_id")["advantage"].sum().abs().max() < 1e-5


def test_the_update_changed_the_policy(reinforce_run):
    project, record = reinforce_run
    trained = load_file(next(record.outputs["06_models/rl_policy"].glob("*.safetensors")))
    start_dir = sorted((project.path / "data" / "06_models" / "stage1_policy").iterdir())[-1] / "stage1_policy"
    start = load_file(next(start_dir.glob("*.safetensors")))
    assert trained.keys() == start.keys()
    assert any(not torch.equal(trained[name], start[name]) for name in start)

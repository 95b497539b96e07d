"""The held-out "seen" offset per environment (``rollout.tasks.seen_offset``): with
``environment.seen_seed_offset: null`` it is 500 on TextWorldExpress-sized train folds and
half the fold on a small one, so a ScienceWorld task with 14 train variations plays its
"seen" tasks from 7; a fold too small for the asked window names the settings to change."""

from __future__ import annotations

import pytest

from hindsight.config import ProjectConfig
from hindsight.config.files import project_settings
from hindsight.envs.adapter import seed_window
from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec
from hindsight.evaluation.heldout import HeldoutConfig, HeldoutPlay, heldout_tasks
from hindsight.rollout.tasks import seen_offset, seen_tasks


class FoldEnv:
    """A stand-in environment whose train fold holds ``size`` tasks (None: unbounded)."""

    def __init__(self, size: int | None) -> None:
        self.size = size

    def fold_size(self, split: str) -> int | None:
        return self.size

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        available = range(self.size if self.size is not None else 10**6)
        return seed_window(available, count, offset, "ScienceWorld task 'boil'", f"{split} variations")

    def close(self) -> None:
        pass


def factory(size: int | None):
    return lambda spec: FoldEnv(size)


SPEC = EnvironmentSpec(env="scienceworld", game="boil")


@pytest.mark.parametrize("size, expected", [(1000, 500), (10**6, 500), (None, 500), (150, 75), (14, 7)])
def test_null_is_500_or_half_a_small_train_fold(size, expected):
    assert seen_offset(SPEC, None, factory(size)) == expected


def test_a_set_offset_is_kept():
    assert seen_offset(SPEC, 3, factory(14)) == 3


def test_seen_tasks_of_a_small_fold_start_half_way():
    assert [task.seed for task in seen_tasks(SPEC, 4, None, factory(14))] == [7, 8, 9, 10]


def test_a_fold_too_small_names_the_settings():
    with pytest.raises(EnvironmentConfigError) as error:
        seen_tasks(SPEC, 4, 500, factory(14))
    message = str(error.value)
    assert "has 14 train variations; asked for 4 from offset 500" in message
    assert "environment.seen_seed_offset=500" in message and "episodes_per_game" in message


def test_the_default_is_null_in_the_settings_and_the_evaluation():
    assert ProjectConfig().environment.seen_seed_offset is None
    assert HeldoutConfig().seen_seed_offset is None
    assert project_settings({"environment": {"env": "scienceworld", "games": [{"game": "boil"}]}}).environment.seen_seed_offset is None


def test_textworldexpress_keeps_its_seen_tasks_from_500():
    """The real twc train fold (1000 seeds): null gives the offset the project always used."""
    spec = EnvironmentSpec(env="textworldexpress", game="twc", params={"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0})
    null = heldout_tasks([spec], HeldoutConfig(play=HeldoutPlay(episodes_per_game=2, splits=["seen"])))["seen"]
    explicit = heldout_tasks([spec], HeldoutConfig(play=HeldoutPlay(episodes_per_game=2, splits=["seen"]), seen_seed_offset=500))["seen"]
    assert null == explicit


def test_the_real_environments_report_their_train_folds():
    """The folds ``seen_offset`` reads: ScienceWorld's boil (14 train variations, "seen" from
    7) and the dual-control domain (100,000: "seen" from 500)."""
    from hindsight.envs import make_env

    boil = EnvironmentSpec("scienceworld", "boil")
    env = make_env(boil)
    try:
        assert env.fold_size("train") == 14
        assert [task.seed for task in seen_tasks(boil, 4, None)] == env.seeds("train", 4, 7)
    finally:
        env.close()
    assert seen_offset(EnvironmentSpec("dual_control", "telecom"), None) == 500

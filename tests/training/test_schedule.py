"""The loop's schedulers as pieces: chosen from the settings, each doing its one job, and
the combinations that cannot run refused by name."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from hindsight.rollout.curriculum import Curriculum, PassRateBand, PassRates, TaskDraw
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig
from hindsight.training.schedule import Schedule
from hindsight.training.stepo import EpisodeBalance, GroupFilter, SampleWeights, ZeroVarianceFilter


def test_the_default_schedule_is_the_plain_loop():
    schedule = Schedule.from_settings(RLConfig())
    assert type(schedule.tasks) is TaskDraw and type(schedule.groups) is GroupFilter
    assert type(schedule.weights) is SampleWeights and not schedule.minibatches.episodic and not schedule.asynchronous
    assert schedule.describe() == "tasks=uniform, groups=every_group, weights=none, minibatches=shuffled, rollouts=synchronous"


def test_each_setting_picks_its_piece():
    schedule = Schedule.from_settings(RLConfig(
        stepo_pass_rate_band=[0.0, 1.0], stepo_filter_zero_variance=True, stepo_filter_max_rounds=3,
        stepo_step_weights=True, odysse_episode_minibatches=True,
    ))
    assert isinstance(schedule.tasks, PassRateBand) and schedule.tasks.band == (0.0, 1.0)
    assert isinstance(schedule.groups, ZeroVarianceFilter) and schedule.groups.extra_rounds == 3
    assert isinstance(schedule.weights, EpisodeBalance) and schedule.minibatches.episodic
    assert isinstance(Schedule.from_settings(RLConfig(curriculum=True)).tasks, Curriculum)
    assert Schedule.from_settings(RLConfig(async_rollouts=True)).asynchronous


def test_what_cannot_run_under_torchrun_is_refused_by_name():
    with pytest.raises(ValueError, match="async_rollouts is not supported under torchrun"):
        Schedule.from_settings(RLConfig(async_rollouts=True)).check(parallel=True)
    with pytest.raises(ValueError, match="stepo_filter_zero_variance is not supported under torchrun"):
        Schedule.from_settings(RLConfig(stepo_filter_zero_variance=True)).check(parallel=True)
    Schedule.from_settings(RLConfig(stepo_step_weights=True, curriculum=True)).check(parallel=True)


def test_settings_two_pieces_would_both_own_are_refused():
    with pytest.raises(ValueError, match="both choose the tasks"):
        RLConfig(curriculum=True, stepo_pass_rate_band=[0.0, 1.0])
    with pytest.raises(ValueError, match="draws every update's tasks in advance"):
        RLConfig(async_rollouts=True, curriculum=True)


def _table(returns: dict[str, tuple[str, list[float]]]) -> pd.DataFrame:
    return pd.DataFrame([
        {"episode_id": episode, "group_id": group, "step": step, "reward": reward, "done": step == len(rewards) - 1, "won": reward > 0 and step == len(rewards) - 1,
         "action_valid": True}
        for episode, (group, rewards) in returns.items()
        for step, reward in enumerate(rewards)
    ])


def test_the_filter_keeps_only_groups_whose_returns_differ():
    table = _table({"a": ("g1", [1.0]), "b": ("g1", [0.0]), "c": ("g2", [0.0]), "d": ("g2", [0.0]), "e": ("g3", [0.0, 1.0]), "f": ("g3", [0.0])})
    assert GroupFilter().keep(table, wanted=2) == (["g1", "g2", "g3"], 0)
    assert ZeroVarianceFilter(2).keep(table, wanted=5) == (["g1", "g3"], 1)
    assert ZeroVarianceFilter(2).keep(table, wanted=1) == (["g1"], 1)


def test_episode_balance_gives_every_episode_the_same_total_weight():
    ids = ["short"] * 2 + ["long"] * 6
    batch = RolloutBatch(table=pd.DataFrame(), samples=[], played=pd.DataFrame(), advantages=torch.ones(8))
    batch.samples = [type("Sample", (), {"episode_id": episode})() for episode in ids]
    metrics = EpisodeBalance().weigh(batch)
    per_episode = {episode: float(batch.advantages[[i for i, e in enumerate(ids) if e == episode]].sum()) for episode in set(ids)}
    assert per_episode["short"] == pytest.approx(per_episode["long"])
    assert float(batch.advantages.mean()) == pytest.approx(1.0)
    assert metrics["stepo/step_weight_max"] / metrics["stepo/step_weight_min"] == pytest.approx(3.0)
    assert SampleWeights().weigh(batch) == {}


def test_only_the_drawing_pieces_report_pass_rates():
    rates = PassRates()
    rates.observe(_table({"a": ("g1", [1.0]), "b": ("g1", [0.0])}))
    assert TaskDraw().summary(rates) == {}
    assert PassRateBand((0.0, 1.0)).summary(rates) == {"tasks/seen": 1.0, "tasks/pass_rate_mean": 0.5}

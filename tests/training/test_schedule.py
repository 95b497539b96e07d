"""The loop's schedulers as pieces: chosen from the settings, each doing its one job, and
the combinations that cannot run refused by name."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from hindsight.methods import build_method
from hindsight.rollout.curriculum import Curriculum, PassRateBand, TaskDraw
from hindsight.rollout.pass_rates import PassRates
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig
from hindsight.training.espo_update import EspoObjective
from hindsight.training.loop import start_loop
from hindsight.training.positive_replay import PositiveReplay
from hindsight.training.schedule import Schedule
from hindsight.training.stepo import EpisodeBalance, SampleWeights, ZeroVarianceFilter
from hindsight.training.update_batch import GroupFilter

pytestmark = pytest.mark.unit


def _rl(**schedulers) -> RLConfig:
    """Core defaults with these scheduler blocks (``training.rl.schedulers.<name>``)."""
    return RLConfig(schedulers=schedulers)


def test_the_default_schedule_is_the_plain_loop():
    schedule = Schedule.from_settings(RLConfig().schedulers)
    assert type(schedule.tasks) is TaskDraw and type(schedule.groups) is GroupFilter
    assert type(schedule.weights) is SampleWeights and not schedule.minibatches.episodic and schedule.asynchronous is None
    assert schedule.objective is None and schedule.replay is None and schedule.rates.smoothing == 0.5
    assert schedule.describe() == "tasks=uniform, groups=every_group, weights=none, minibatches=shuffled, rollouts=synchronous"


def test_each_setting_picks_its_piece():
    schedule = Schedule.from_settings(_rl(
        stepo={"pass_rate_band": [0.0, 1.0], "filter_zero_variance": True, "filter_max_rounds": 3, "step_weights": True},
        odysse={"episode_minibatches": True}, pass_rates={"smoothing": 0.25},
    ).schedulers)
    assert isinstance(schedule.tasks, PassRateBand) and schedule.tasks.band == (0.0, 1.0)
    assert isinstance(schedule.groups, ZeroVarianceFilter) and schedule.groups.extra_rounds == 3
    assert isinstance(schedule.weights, EpisodeBalance) and schedule.minibatches.episodic and schedule.rates.smoothing == 0.25
    curriculum = Schedule.from_settings(_rl(curriculum={"enabled": True, "hard_threshold": 0.4, "replay_weight_cap": 3.0}).schedulers)
    assert isinstance(curriculum.tasks, Curriculum) and curriculum.replay == PositiveReplay(0.4, 3.0)
    assert Schedule.from_settings(_rl(curriculum={"enabled": True, "positive_replay": False}).schedulers).replay is None
    assert Schedule.from_settings(_rl(async_rollouts={"enabled": True, "max_staleness": 2}).schedulers).asynchronous.max_staleness == 2
    espo = Schedule.from_settings(_rl(odysse={"episode_minibatches": True, "objective": "espo"}).schedulers)
    assert isinstance(espo.objective, EspoObjective)
    assert Schedule.from_settings(_rl(backend_correction={"weight_cap": None}).schedulers).correction.weight_cap is None
    assert Schedule.from_settings(RLConfig().schedulers).correction.weight_cap == 2.0


def test_the_loop_starts_with_the_schedule_and_the_pass_rate_estimates_of_its_settings():
    policy = SimpleNamespace(model=torch.nn.Linear(2, 2))
    state = start_loop(policy, [], _rl(pass_rates={"smoothing": 0.25}, stepo={"filter_zero_variance": True}), 0, None)
    assert isinstance(state.schedule.groups, ZeroVarianceFilter) and state.rates.smoothing == 0.25
    plain = start_loop(policy, [], RLConfig(), 0, None)
    assert type(plain.schedule.groups) is GroupFilter and plain.rates.smoothing == 0.5 and plain.run.update == 0


def test_what_cannot_run_under_torchrun_is_refused_by_name():
    grpo = build_method(RLConfig(algorithm="grpo"))
    with pytest.raises(ValueError, match="schedulers.async_rollouts is not supported under torchrun"):
        Schedule.from_settings(_rl(async_rollouts={"enabled": True}).schedulers).check(grpo, parallel=True)
    with pytest.raises(ValueError, match="schedulers.stepo.filter_zero_variance is not supported under torchrun"):
        Schedule.from_settings(_rl(stepo={"filter_zero_variance": True}).schedulers).check(grpo, parallel=True)
    Schedule.from_settings(_rl(stepo={"step_weights": True}, curriculum={"enabled": True}).schedulers).check(grpo, parallel=True)


def test_settings_two_pieces_would_both_own_are_refused():
    with pytest.raises(ValueError, match="both choose the tasks"):
        _rl(curriculum={"enabled": True}, stepo={"pass_rate_band": [0.0, 1.0]})
    with pytest.raises(ValueError, match="async_rollouts.mini_groups must be >= 0"):
        _rl(async_rollouts={"enabled": True, "mini_groups": -1})
    with pytest.raises(ValueError, match="pass_rates.smoothing must be in"):
        _rl(pass_rates={"smoothing": 0.0})
    with pytest.raises(ValueError, match="curriculum.infeasible_share and replay_share"):
        _rl(curriculum={"infeasible_share": 0.75, "replay_share": 0.5})


def test_asynchronous_rollouts_take_the_task_draw_and_the_filter_along():
    schedule = Schedule.from_settings(
        _rl(async_rollouts={"enabled": True}, curriculum={"enabled": True}, stepo={"filter_zero_variance": True}).schedulers
    )
    assert schedule.asynchronous is not None and isinstance(schedule.tasks, Curriculum) and isinstance(schedule.groups, ZeroVarianceFilter)
    schedule.check(build_method(RLConfig(algorithm="grpo")), parallel=False)
    banded = Schedule.from_settings(_rl(async_rollouts={"enabled": True}, stepo={"pass_rate_band": [0.0, 1.0]}).schedulers)
    assert isinstance(banded.tasks, PassRateBand)


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


def _batch(table: pd.DataFrame) -> RolloutBatch:
    batch = RolloutBatch(table=table, samples=[], played=table)
    batch.samples = [type("Sample", (), {"episode_id": episode})() for episode in table["episode_id"]]
    return batch


def test_episode_balance_nets_zero_in_every_group_of_unequal_lengths():
    """One group: a 3-step success and a 10-step failure (plain step-wise GRPO nets 0; the
    earlier STEPO, statistics over step samples then 1/T_i, netted +7.98 here), and a second
    group of a 2-step and a 5-step episode."""
    table = _table({
        "win": ("g", [0.0, 0.0, 1.0]), "loss": ("g", [0.0] * 10),
        "quick": ("h", [0.0, 0.5]), "slow": ("h", [0.0] * 4 + [1.0]),
    })
    batch = _batch(table)
    rl = RLConfig(algorithm="grpo", schedulers={"stepo": {"step_weights": True}})
    advantages, metrics = EpisodeBalance().advantages(build_method(rl), batch, rl, max_steps=20)
    for group in ("g", "h"):
        assert abs(float(advantages[(table["group_id"] == group).to_numpy()].sum())) < 1e-5
    per_episode = pd.Series(advantages.numpy()).groupby(table["episode_id"].to_numpy()).sum()
    assert per_episode["win"] == pytest.approx(-per_episode["loss"], abs=1e-5) and per_episode["win"] > 0
    assert float(advantages[:3].mean()) / float(advantages[3:13].mean()) == pytest.approx(-10 / 3, rel=1e-4)
    assert metrics["stepo/step_weight_max"] / metrics["stepo/step_weight_min"] == pytest.approx(5.0)
    plain, none = SampleWeights().advantages(build_method(rl), batch, rl, max_steps=20)
    assert none == {} and torch.allclose(plain, build_method(rl).advantages(batch, rl, 20))


def test_episode_balance_refuses_a_method_with_a_step_level_term():
    schedule = Schedule.from_settings(_rl(stepo={"step_weights": True}).schedulers)
    with pytest.raises(ValueError, match="'gigpo' adds a step-level term"):
        schedule.check(build_method(RLConfig(algorithm="gigpo")), parallel=False)
    schedule.check(build_method(RLConfig(algorithm="seed")), parallel=False)


def test_only_the_drawing_pieces_report_pass_rates():
    rates = PassRates()
    rates.observe(_table({"a": ("g1", [1.0]), "b": ("g1", [0.0])}))
    assert TaskDraw().summary(rates) == {}
    assert PassRateBand((0.0, 1.0)).summary(rates) == {"tasks/seen": 1.0, "tasks/pass_rate_mean": 0.5}


def test_the_loop_and_the_update_read_no_scheduler_setting():
    """They ask the schedule's pieces (``training.schedule``); the settings are read once, by
    ``Schedule.from_settings``."""
    import ast
    import inspect

    from hindsight.training import loop, update

    for module in (loop, update):
        source = inspect.getsource(module)
        assert "schedulers." not in source.replace("training.rl.schedulers", ""), module.__name__
        imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
        assert not imported & {"hindsight.training.espo_update", "hindsight.training.stepo"}, module.__name__

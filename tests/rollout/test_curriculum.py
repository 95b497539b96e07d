"""Pass-rate estimates and the task schedulers (``rollout.curriculum``): known answers on
hand-made rollout tables; no model, no environment."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.infeasible import DECLARE_PARAM, base_spec, is_infeasible
from hindsight.rollout.curriculum import Curriculum, CurriculumSettings, calibrated_draw, curriculum_bucket, curriculum_draw, task_draw
from hindsight.rollout.pass_rates import PassRates, PassRateSettings
from hindsight.rollout.tasks import make_tasks, sample_update_tasks
from hindsight.training.rl_config import RLConfig

pytestmark = pytest.mark.unit

SPEC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1})
POOL = make_tasks(SPEC, "train", range(10))


def table(outcomes: dict[int, list[bool]]) -> pd.DataFrame:
    """A two-step-per-episode rollout table: task seed -> won flag of each episode."""
    rows = []
    for seed, wins in outcomes.items():
        group = POOL[seed].group_id
        for member, won in enumerate(wins):
            for step in range(2):
                last = step == 1
                rows.append({
                    "episode_id": f"{group}/{member}", "group_id": group, "step": step,
                    "reward": float(won and last), "won": bool(won and last), "action_valid": True,
                })
    return pd.DataFrame(rows)


def test_estimate_is_the_first_group_rate_then_a_moving_average():
    rates = PassRates(smoothing=0.5)
    rates.observe(table({0: [True, False, False, False]}))
    assert rates.estimate(POOL[0].group_id) == 0.25
    rates.observe(table({0: [True, True, True, True]}))
    assert rates.estimate(POOL[0].group_id) == pytest.approx(0.5 * 0.25 + 0.5 * 1.0)
    record = rates.record(POOL[0].group_id)
    assert (record.episodes, record.wins) == (8, 5)
    assert rates.estimate(POOL[1].group_id) is None  # never played
    assert rates.summary() == {"tasks/seen": 1.0, "tasks/pass_rate_mean": pytest.approx(0.625)}


def test_state_round_trips_exactly():
    rates = PassRates(smoothing=0.3)
    rates.observe(table({0: [True, False], 3: [False, False], 5: [True, True]}))
    rates.observe(table({0: [True, True]}))
    restored = PassRates(smoothing=0.9)
    restored.load_state_dict(rates.state_dict())
    assert restored.smoothing == 0.3
    assert restored.records == rates.records


def test_buckets():
    rates = PassRates(smoothing=0.5)
    rates.observe(table({0: [False, False, False, False], 1: [True, False, False, False],
                         2: [True, True, True, True], 3: [True, True, False, False]}))
    assert curriculum_bucket(rates.record(POOL[0].group_id), 0.25) == "unsolved"
    assert curriculum_bucket(rates.record(POOL[1].group_id), 0.25) == "hard_success"
    assert curriculum_bucket(rates.record(POOL[2].group_id), 0.25) == "mastered"
    assert curriculum_bucket(rates.record(POOL[3].group_id), 0.25) == "learnable"
    assert curriculum_bucket(rates.record(POOL[4].group_id), 0.25) == "learnable"  # unseen
    rates.observe(table({1: [False, False, False, False]}))  # solved once, now forgotten
    assert rates.estimate(POOL[1].group_id) == 0.125
    assert curriculum_bucket(rates.record(POOL[1].group_id), 0.25) == "hard_success"


def pool_with_known_buckets() -> PassRates:
    """Seeds 0-2 unsolved, 3-4 hard successes, 5 mastered, 6-9 learnable (6-7 seen)."""
    rates = PassRates(smoothing=0.5)
    rates.observe(table({
        0: [False] * 4, 1: [False] * 4, 2: [False] * 4, 3: [True, False, False, False], 4: [True, False, False, False],
        5: [True] * 4, 6: [True, True, False, False], 7: [True, True, True, False],
    }))
    return rates


def test_curriculum_mixes_the_shares():
    rates = pool_with_known_buckets()
    tasks, metrics = curriculum_draw(
        POOL, rates, 8, random.Random(0), infeasible_share=0.125, replay_share=0.25, hard_threshold=0.25
    )
    assert len(tasks) == 8 and len({task.group_id for task in tasks}) == 8
    variants = [task for task in tasks if is_infeasible(task.spec)]
    real = [task for task in tasks if not is_infeasible(task.spec)]
    assert len(variants) == 1 and metrics["curriculum/infeasible_drawn"] == 1  # generated, not a never-solved task
    assert base_spec(variants[0].spec) == SPEC and variants[0].group_id.startswith("textworldexpress/twc+infeasible/train/")
    assert all(task.spec.params.get(DECLARE_PARAM) for task in real)  # the declare action offered on real tasks too
    assert metrics["curriculum/hard_success_drawn"] == 2
    assert metrics["curriculum/learnable_drawn"] == 4  # all four learnable ones
    assert metrics["curriculum/unsolved_drawn"] == 1  # the learnable bucket ran one short: filled from unsolved first
    assert metrics["curriculum/mastered_drawn"] == 0
    seeds = {task.seed for task in real}
    assert {3, 4, 6, 7, 8, 9} <= seeds and len({0, 1, 2} & seeds) == 1
    assert metrics["curriculum/unsolved_pool"] == 3 and metrics["curriculum/learnable_pool"] == 4
    assert metrics["curriculum/infeasible_pool"] == 10  # every pool task has an infeasible variant


def test_unsolved_tasks_fill_after_learnable_ones_and_no_share_no_variant():
    rates = pool_with_known_buckets()
    tasks, metrics = curriculum_draw(POOL, rates, 9, random.Random(1), infeasible_share=0.0, replay_share=0.0, hard_threshold=0.25)
    assert metrics["curriculum/unsolved_drawn"] == 3 and metrics["curriculum/hard_success_drawn"] == 2
    assert metrics["curriculum/infeasible_drawn"] == 0 and all(task.spec == SPEC for task in tasks)
    _, metrics = curriculum_draw(POOL, rates, 4, random.Random(1), infeasible_share=0.0, replay_share=0.0, hard_threshold=0.25)
    assert metrics["curriculum/unsolved_drawn"] == 0 and metrics["curriculum/learnable_drawn"] == 4


def test_calibration_keeps_the_band_and_refills_from_outside():
    rates = pool_with_known_buckets()
    tasks, metrics = calibrated_draw(POOL, rates, 4, (0.0, 1.0), random.Random(0))
    assert all(rates.estimate(t.group_id) is None or 0 < rates.estimate(t.group_id) < 1 for t in tasks)
    assert metrics == {"stepo/calibration_in_band": 4.0, "stepo/calibration_out_of_band": 0.0,
                       "stepo/calibration_pool_in_band": 6.0}
    tasks, metrics = calibrated_draw(POOL, rates, 8, (0.0, 1.0), random.Random(0))
    assert metrics["stepo/calibration_in_band"] == 6 and metrics["stepo/calibration_out_of_band"] == 2
    assert len({t.seed for t in tasks}) == 8
    _, metrics = calibrated_draw(POOL, rates, 8, (0.3, 1.0), random.Random(0))
    assert metrics["stepo/calibration_pool_in_band"] == 4  # 0.5, 0.75 and two unseen


def test_uniform_first_round_is_the_plain_draw_and_later_rounds_exclude():
    draw = task_draw(CurriculumSettings())  # the curriculum off, no band: uniform
    rates = PassRates()
    tasks, metrics = draw.draw(POOL, rates, 4, seed=3, update=2)
    assert tasks == sample_update_tasks(POOL, 4, 3, 2) and metrics == {}
    played = {t.group_id for t in tasks}
    more, _ = draw.draw(POOL, rates, 10, seed=3, update=2, round_index=1, exclude=played)
    assert len(more) == 6 and not played & {t.group_id for t in more}


def test_draws_are_deterministic_and_scheduler_settings_are_checked():
    rates = pool_with_known_buckets()
    draw = task_draw(CurriculumSettings(enabled=True))
    assert isinstance(draw, Curriculum)
    first, _ = draw.draw(POOL, rates, 5, seed=1, update=4)
    again, _ = draw.draw(POOL, rates, 5, seed=1, update=4)
    assert first == again
    with pytest.raises(ValueError, match="set one"):
        RLConfig(schedulers={"curriculum": {"enabled": True}, "stepo": {"pass_rate_band": (0.0, 1.0)}})
    with pytest.raises(ValueError, match="stepo.pass_rate_band"):
        RLConfig(schedulers={"stepo": {"pass_rate_band": (0.8, 0.2)}})
    with pytest.raises(ValueError, match="sum to at most 1"):
        CurriculumSettings(infeasible_share=0.6, replay_share=0.6)
    with pytest.raises(ValueError, match="curriculum.hard_threshold must be in"):
        CurriculumSettings(hard_threshold=1.5)
    with pytest.raises(ValueError, match="pass_rates.smoothing"):
        PassRateSettings(smoothing=1.5)


def test_small_shares_hold_on_average():
    """0.125 of 4 tasks is half a task: drawn in about half of the updates, never more than one."""
    rates = pool_with_known_buckets()
    counts = [
        curriculum_draw(POOL, rates, 4, random.Random(seed), infeasible_share=0.125, replay_share=0.0, hard_threshold=0.25)[1][
            "curriculum/infeasible_drawn"
        ]
        for seed in range(400)
    ]
    assert set(counts) == {0.0, 1.0}
    assert 0.4 < sum(counts) / len(counts) < 0.6

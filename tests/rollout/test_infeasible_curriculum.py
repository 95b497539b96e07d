"""The curriculum's generated infeasible tasks and its stored successes
(``rollout.curriculum``): hand-made rollout tables, no model, no environment."""

from __future__ import annotations

import pickle
import random

import pandas as pd
import pytest

from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.infeasible import DECLARE_ACTION, infeasible_spec, is_infeasible
from hindsight.rollout.curriculum import Curriculum, curriculum_draw
from hindsight.rollout.pass_rates import PassRates, declared_metrics
from hindsight.rollout.tasks import TaskRef, make_tasks

pytestmark = pytest.mark.unit

SPEC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1})
POOL = make_tasks(SPEC, "train", range(12))


def episode_rows(group_id: str, member: int, actions: list[str], won: bool) -> list[dict]:
    return [
        {
            "episode_id": f"{group_id}/{member}", "group_id": group_id, "step": step, "action": action,
            "reward": float(won and step == len(actions) - 1), "won": bool(won and step == len(actions) - 1),
            "action_valid": True, "response_logprobs": [-0.5 - step, -0.25],
        }
        for step, action in enumerate(actions)
    ]


def test_the_infeasible_share_draws_generated_variants():
    counts = []
    for seed in range(300):
        tasks, metrics = curriculum_draw(
            POOL, PassRates(), 8, random.Random(seed), infeasible_share=0.25, replay_share=0.0, hard_threshold=0.25
        )
        variants = [task for task in tasks if is_infeasible(task.spec)]
        assert len(tasks) == 8 and len(variants) == metrics["curriculum/infeasible_drawn"]
        assert all(TaskRef(SPEC, task.seed) in POOL for task in variants)  # each made from a pool task
        counts.append(len(variants))
    assert set(counts) == {2} and sum(counts) / (8 * len(counts)) == 0.25
    played = {TaskRef(infeasible_spec(SPEC), seed).group_id for seed in range(11)}
    tasks, _ = Curriculum(0.25, 0.0, 0.25).draw(POOL, PassRates(), 8, 0, 0, round_index=1, exclude=played)
    assert [task.seed for task in tasks if is_infeasible(task.spec)] == [11]  # only the one variant not yet played


def test_declared_rates_split_infeasible_and_feasible_tasks():
    variant, real = TaskRef(infeasible_spec(SPEC), 1).group_id, POOL[1].group_id
    table = pd.DataFrame(
        episode_rows(variant, 0, ["look", DECLARE_ACTION], True) + episode_rows(variant, 1, ["look"], False)
        + episode_rows(real, 0, [DECLARE_ACTION], False) + episode_rows(real, 1, ["look"], False)
        + episode_rows(real, 2, ["take key"], True) + episode_rows(real, 3, ["look", "open box"], True)
    )
    assert declared_metrics(table) == {
        "curriculum/infeasible_declared_rate": 0.5, "curriculum/feasible_declared_rate": 0.25,
    }
    rates = PassRates()
    rates.observe(table)
    assert Curriculum(0.25, 0.0, 0.25).summary(rates)["curriculum/infeasible_declared_rate"] == 0.5
    assert declared_metrics(pd.DataFrame(episode_rows(real, 0, ["look"], False))) == {}  # nothing could declare


def test_the_latest_success_of_each_real_task_is_stored_and_checkpointed():
    variant, first, second = TaskRef(infeasible_spec(SPEC), 1).group_id, POOL[1].group_id, POOL[2].group_id
    rates = PassRates()
    rates.observe(pd.DataFrame(
        episode_rows(first, 0, ["take key", "open box"], True) + episode_rows(first, 1, ["look"], False)
        + episode_rows(second, 0, ["look"], False) + episode_rows(variant, 0, [DECLARE_ACTION], True)
    ))
    assert set(rates.successes) == {first}  # no success of the second task; variants are not stored
    assert [row["action"] for row in rates.successes[first]] == ["take key", "open box"]
    rates.observe(pd.DataFrame(episode_rows(first, 5, ["open box"], True)))
    assert [row["episode_id"] for row in rates.successes[first]] == [f"{first}/5"]  # the latest one
    restored = PassRates()
    restored.load_state_dict(pickle.loads(pickle.dumps(rates.state_dict())))
    assert restored.successes == rates.successes and restored.records == rates.records
    assert restored.state_dict() == rates.state_dict()

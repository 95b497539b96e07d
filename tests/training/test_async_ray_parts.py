"""The pieces of rollout workers as Ray actors (``training.ray_rollouts``) that need no Ray
running: the settings refused by name, a request divided among the actors into whole-task
parts (part 0 keeps the request's seed), the parts' results merged in part order with their
fault counts added up, and Ray imported by nothing but that engine."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from hindsight.rollout.faults import FailedEpisode, RolloutFaults
from hindsight.rollout.results import RolloutResult
from hindsight.rollout.stats import FAULTS_ATTR
from hindsight.training.scheduler_settings import AsyncSettings
from hindsight.training.ray_rollouts import merge_results, part_seed, split_parts


@pytest.mark.parametrize("keys, message", [
    ({"engine": "threads"}, r"async_rollouts.engine must be one of \('process', 'ray'\), got 'threads'"),
    ({"engine": "ray", "workers": 0}, r"async_rollouts.workers must be >= 1, got 0"),
    ({"workers": 2}, r"async_rollouts.workers: 2 needs engine: ray"),
])
def test_bad_settings_are_refused_by_name(keys, message):
    with pytest.raises(ValueError, match=message):
        AsyncSettings(enabled=True, **keys)
    assert AsyncSettings(engine="ray", workers=2).workers == 2


def test_a_request_is_divided_into_whole_task_parts():
    assert [len(part) for part in split_parts(list("abcde"), 2)] == [3, 2]
    assert split_parts(list("abcde"), 2) == [list("abc"), list("de")]  # contiguous, order kept
    assert split_parts(["a"], 2) == [["a"]]  # fewer tasks than actors: no empty part
    assert split_parts(list("abcd"), 1) == [list("abcd")]
    assert part_seed(17, 0) == 17 and len({part_seed(17, p) for p in range(4)}) == 4


def result(group: str, won: list[bool], failed: int = 0) -> RolloutResult:
    table = pd.DataFrame({
        "episode_id": [f"{group}/0"] * len(won), "group_id": group, "step": range(len(won)), "won": won, "reward": 0.0,
        "action": "look", "valid_actions": [["look"]] * len(won), "action_valid": True, "policy_version": 0,
    })
    faults = RolloutFaults(planned=1 + failed, failed=[FailedEpisode(f"{group}/x", group, 1, "env_crash", "jvm") for _ in range(failed)])
    table.attrs[FAULTS_ATTR] = faults.metrics()
    return RolloutResult(table=table, samples=[f"{group}{i}" for i in range(len(won))], stats={"wall_seconds": 1.5}, faults=faults)


def test_parts_are_merged_in_part_order_with_their_faults_added_up():
    merged = merge_results([result("g1", [False, True]), result("g2", [False, False, False], failed=1)])
    assert merged.table["group_id"].tolist() == ["g1", "g1", "g2", "g2", "g2"]
    assert merged.samples == ["g10", "g11", "g20", "g21", "g22"]
    assert merged.faults.planned == 3 and len(merged.faults.failed) == 1
    assert merged.table.attrs[FAULTS_ATTR]["faults/failed_episodes"] == 1.0
    assert merged.stats["wall_seconds"] == 3.0  # summed over the actors


def test_ray_is_imported_only_by_its_engine():
    code = (
        "import sys; import hindsight.runs.rl_run, hindsight.training.async_rollouts;"
        "assert 'ray' not in sys.modules, 'ray imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

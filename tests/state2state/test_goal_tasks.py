"""Exploration -> task set -> goal environment on real twc games: every goal is new at the
start and reached by its recorded path; the random agent plays the goal tasks through the
unchanged rollout code; bad task tables are refused naming row and field."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.envs import make_env
from hindsight.rollout.random_agent import run_random_agent
from hindsight.rollout.tasks import make_tasks
from hindsight.state2state.exploration import STATE_COLUMNS, explore_states
from hindsight.state2state.extractors import extract_facts
from hindsight.state2state.goal_env import GoalEnvironmentFactory, goal_task_refs
from hindsight.state2state.task_set import TASK_COLUMNS, TaskSetError, build_task_set, check_task_set


@pytest.fixture(scope="module")
def states(twc_spec):
    return explore_states(make_tasks(twc_spec, "train", [0, 1, 2]), make_env, random_episodes=2, seed=0)


@pytest.fixture(scope="module")
def task_set(states):
    return check_task_set(build_task_set(states, facts_per_goal=2, max_tasks=12, seed=0))


def test_exploration_records_every_state_with_its_path(states):
    assert list(states.columns) == STATE_COLUMNS
    assert set(states["seed"]) == {0, 1, 2} and set(states["source"]) == {"random"}
    episodes = states.groupby(["source", "episode"])
    assert episodes.ngroups == 6
    for _, episode in episodes:
        assert list(episode["step"]) == list(range(len(episode)))
        assert all(len(path) == step for path, step in zip(episode["path"], episode["step"]))
    # every episode of one seed starts from the same facts
    starts = states[states["step"] == 0].groupby("seed")["facts"].apply(lambda f: {tuple(x) for x in f})
    assert all(len(distinct) == 1 for distinct in starts)


def test_goals_are_new_at_the_start_and_reached_by_their_path(task_set, twc_spec, states):
    assert list(task_set.columns) == TASK_COLUMNS and 0 < len(task_set) <= 12
    assert all(1 <= len(goal) <= 2 for goal in task_set["goal"])
    factory = GoalEnvironmentFactory(task_set)
    refs = goal_task_refs(task_set, [twc_spec])
    env = factory(refs[0].spec)
    for ref, row in zip(refs, task_set.itertuples(index=False)):
        assert ref.group_id == f"state2state/twc/train/{row.task_id}"
        _, info = env.reset(ref.seed, ref.split)
        start = extract_facts(env)
        assert not (set(row.goal) & start), "a goal fact already held at the start"
        assert info["task"] == row.task and not info["won"] and info["task_type"] == "twc_goal"
        for number, action in enumerate(row.path, start=1):
            _, reward, terminated, truncated, info = env.step(action)
            assert info["won"] == (number == len(row.path)), "won before or after the end of its path"
        assert terminated and not truncated and reward == twc_spec.reward.success_reward
        assert set(row.goal) <= extract_facts(env)
    env.close()


def test_same_seed_same_task_set(states, task_set):
    again = build_task_set(states, facts_per_goal=2, max_tasks=12, seed=0)
    pd.testing.assert_frame_equal(again, task_set)
    other = build_task_set(states, facts_per_goal=2, max_tasks=12, seed=1)
    assert list(other["goal"]) != list(task_set["goal"])


def test_random_agent_plays_goal_tasks_through_the_rollout_code(task_set, twc_spec):
    refs = goal_task_refs(task_set, [twc_spec])
    result = run_random_agent(GoalEnvironmentFactory(task_set), refs, group_size=2, seed=1)
    table = result.table
    assert result.stats["episodes"] == 2 * len(refs)
    assert set(table["task_type"]) == {"twc_goal"}
    assert set(table["group_id"]) == {ref.group_id for ref in refs}
    won = table.groupby("episode_id")["won"].any()
    assert 0 < won.mean() < 1  # neither trivial nor impossible for the random floor


def test_bad_task_tables_name_row_and_field(task_set, tmp_path):
    path = tmp_path / "tasks.parquet"
    task_set.to_parquet(path)
    check_task_set(pd.read_parquet(path))  # a parquet round trip keeps a valid table valid
    broken = task_set.copy()
    broken.at[1, "goal"] = ["the fridge is open"]
    with pytest.raises(TaskSetError, match=r"row 1, field 'goal': Not a fact"):
        check_task_set(broken)
    with pytest.raises(TaskSetError, match=r"missing column\(s\) \['path'\]"):
        check_task_set(task_set.drop(columns=["path"]))
    with pytest.raises(TaskSetError, match="no tasks"):
        check_task_set(task_set.iloc[:0])

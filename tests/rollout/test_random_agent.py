"""The random-valid-action agent: same table, reward on the winning step."""

from __future__ import annotations

import dataclasses

import pytest

from hindsight.envs import make_env
from hindsight.rollout import make_tasks, run_random_agent
from hindsight.rollout.live_episode import TABLE_COLUMNS


def test_random_agent_writes_the_same_table_and_sometimes_wins(twc_spec):
    tasks = make_tasks(dataclasses.replace(twc_spec, max_steps=30), "train", range(10))
    result = run_random_agent(make_env, tasks, group_size=2, max_steps=20, seed=3)
    table = result.table
    assert list(table.columns) == TABLE_COLUMNS
    assert table["episode_id"].nunique() == 20 and (table["policy_version"] == -1).all()
    assert all(action in valid for action, valid in zip(table["action"], table["valid_actions"]))
    winning = table[table["won"]]
    assert len(winning) > 0  # the floor is not zero on one room / two items
    assert (winning["reward"] == 10.0).all() and winning["done"].all()
    for episode_id in winning["episode_id"]:
        rows = table[table["episode_id"] == episode_id]
        assert rows["won"].iloc[-1] and rows["won"].sum() == 1
        assert rows["score"].iloc[-1] == pytest.approx(1.0)
    assert result.stats["success_rate"] == pytest.approx(table.groupby("episode_id")["won"].any().mean())
    assert table.groupby("episode_id")["step"].count().max() <= 20
    again = run_random_agent(make_env, tasks, group_size=2, max_steps=20, seed=3)
    assert again.table["action"].tolist() == table["action"].tolist()
    schema = pytest.importorskip("hindsight.data.schema")
    schema.validate_trajectories(table, "random agent")


def test_rewards_are_the_ones_the_environment_gives(twc_spec):
    """The table records the env's own step reward, so the env's RewardConfig decides it."""
    from functools import partial

    from hindsight.envs.reward import RewardConfig

    reward = RewardConfig(success_reward=3.0, invalid_penalty=0.25)
    tasks = make_tasks(dataclasses.replace(twc_spec, max_steps=30), "train", range(6))
    table = run_random_agent(partial(make_env, reward=reward), tasks, group_size=2, max_steps=20, seed=3).table
    assert table["won"].any()
    assert (table.loc[table["won"], "reward"] == 3.0).all() and (table.loc[~table["won"], "reward"] == 0.0).all()

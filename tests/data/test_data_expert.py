"""Expert collection from the environments' gold paths (real TextWorldExpress / ScienceWorld)."""

import time

import pytest

from hindsight.data import collect_expert_trajectories, ingestion_counts, summarize_episodes
from hindsight.envs import EnvironmentConfigError, EnvironmentSpec
from hindsight.envs.reward import RewardConfig

TWC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2})
COOKING = EnvironmentSpec(
    "textworldexpress", "cookingworld", {"numLocations": 1, "numIngredients": 2, "numDistractorItems": 2, "includeDoors": 0}
)


def test_expert_table_on_a_handful_of_tasks():
    table = collect_expert_trajectories([TWC, COOKING], {"train": 3, "dev": 2, "test": 2}, seed_offset=5)
    summary = summarize_episodes(table)
    assert len(summary) == 14
    assert summary["success"].all() and (summary["return"] == 10.0).all() and (summary["invalid_actions"] == 0).all()
    assert set(table["source"]) == {"expert"} and set(table["policy_version"]) == {-1}
    assert (table["action"] == table["response"]).all()
    assert table.groupby("episode_id")["done"].sum().eq(1).all()
    last_steps = table.groupby("episode_id")["step"].transform("max") == table["step"]
    assert table.loc[last_steps, "won"].all() and not table.loc[~last_steps, "won"].any()
    assert "textworldexpress/twc/train/5" in set(table["group_id"])
    assert set(table.loc[table["split"] == "dev", "seed"]) == {10005, 10006}
    counts = ingestion_counts(table)
    assert counts["ingestion/success_rate/twc"] == 1.0 and counts["ingestion/success_rate/cookingworld"] == 1.0
    first = table.iloc[0]
    assert first["observation"] == first["anchor_observation"] and first["action"] in first["valid_actions"]


def test_scienceworld_expert_episode():
    spec = EnvironmentSpec("scienceworld", "find-animal", {}, max_steps=50)
    table = collect_expert_trajectories([spec], {"train": 1}, reward=RewardConfig(success_reward=1.0))
    assert summarize_episodes(table)["success"].tolist() == [True]
    assert table["reward"].iloc[-1] == 1.0 and table["task_type"].iloc[0] == "find-animal"


def test_two_specs_for_one_game_are_refused():
    with pytest.raises(EnvironmentConfigError, match="Two specs for textworldexpress/twc"):
        collect_expert_trajectories([TWC, EnvironmentSpec("textworldexpress", "twc", {})], {"train": 1})


def test_two_hundred_expert_episodes_are_fast():
    start = time.perf_counter()
    table = collect_expert_trajectories([TWC, COOKING], {"train": 100})
    elapsed = time.perf_counter() - start
    assert table["episode_id"].nunique() == 200
    assert summarize_episodes(table)["success"].all()
    assert elapsed < 60, f"200 expert episodes took {elapsed:.1f} s"

"""The batched rollout engine on the real TextWorldExpress environment."""

from __future__ import annotations

import pytest
import torch

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentCrashedError
from hindsight.policy.encoding import collate
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.prompts import episode_prompts
from hindsight.rollout import RolloutConfig, planned_episode_ids, run_rollouts
from hindsight.rollout.faults import ENV_CRASH
from hindsight.rollout.live_episode import TABLE_COLUMNS
from hindsight.rollout.stats import rollout_metrics
from hindsight.policy.skill_injection import SKILL_HEADER

from faulty_env import HangsOnOneTask
from hindsight.policy.generation import SamplingConfig

GROUP_SIZE = 3


class CountingFactory:
    """``make_env`` that counts how many environments it built."""

    def __init__(self) -> None:
        self.built = 0

    def __call__(self, spec):
        self.built += 1
        return make_env(spec)


@pytest.fixture(scope="module")
def factory():
    return CountingFactory()


@pytest.fixture(scope="module")
def result(tiny_policy, twc_tasks, factory):
    """3 tasks x 3 episodes with only 4 live at once (slots are reused)."""
    config = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), group_size=GROUP_SIZE, max_parallel=4, seed=11, progress=False)
    return run_rollouts(tiny_policy, factory, twc_tasks, config, policy_version=5)


def test_table_shape_and_groups(result, twc_tasks, factory):
    table = result.table
    assert list(table.columns) == TABLE_COLUMNS
    episodes = table.groupby("episode_id")
    assert episodes.ngroups == len(twc_tasks) * GROUP_SIZE
    groups = table.groupby("group_id")
    assert sorted(groups.groups) == sorted(task.group_id for task in twc_tasks)
    for group_id, rows in groups:
        assert rows["episode_id"].nunique() == GROUP_SIZE
        assert rows["seed"].nunique() == 1 and group_id.endswith(f"/train/{rows['seed'].iloc[0]}")
        assert rows["task"].nunique() == 1 and rows["split"].eq("train").all()
        # members of a group start from the same state
        first = rows[rows["step"] == 0]
        assert first["observation"].nunique() == 1
    for _, rows in episodes:
        assert rows["step"].tolist() == list(range(len(rows)))
        assert rows["done"].tolist() == [False] * (len(rows) - 1) + [True]
        assert len(rows) == 8 or rows["won"].iloc[-1]
        assert rows["won"].sum() <= 1
    assert (table["policy_version"] == 5).all() and (table["source"] == "rollout").all()
    assert table["episode_id"].unique().tolist() == planned_episode_ids(
        twc_tasks, RolloutConfig(group_size=GROUP_SIZE, seed=11), policy_version=5
    )
    assert factory.built <= 4  # environments are reused across episodes


def test_table_passes_the_schema(result):
    schema = pytest.importorskip("hindsight.data.schema")
    validated = schema.validate_trajectories(result.table, "rollout test")
    assert len(validated) == len(result.table)


def test_constrained_actions_are_valid_and_rewarded(result):
    table = result.table
    assert all(action in valid for action, valid in zip(table["action"], table["valid_actions"]))
    assert table["action_valid"].all() and (table["action"] == table["response"]).all()
    expected = 10.0 * table["won"].astype(float)
    assert (table["reward"] == expected).all()
    assert result.stats["invalid_action_rate"] == 0.0 and result.stats["off_list_action_rate"] == 0.0
    assert result.stats["episodes"] == 9 and result.stats["env_steps_per_s"] > 0
    assert result.stats["generated_tokens"] >= len(table)


def test_prompts_carry_the_history(result):
    table, samples = result.table, result.samples
    assert [(s.episode_id, s.step) for s in samples] == list(zip(table["episode_id"], table["step"]))
    for episode_id, rows in table.groupby("episode_id", sort=False):
        prompts = [s.prompt for s in samples if s.episode_id == episode_id]
        rebuilt = episode_prompts(
            rows["task"].iloc[0], rows["observation"].tolist(), rows["action"].tolist(), rows["valid_actions"].tolist()
        )
        assert prompts == rebuilt
        actions = rows["action"].tolist()
        for step in range(1, len(prompts)):
            assert f"Action {step - 1}: {actions[step - 1]}\n" in prompts[step]
        assert "History:" not in prompts[0]


def test_old_logprobs_match_a_recomputation(result, tiny_policy):
    samples = result.samples
    for sample, logprobs in zip(samples, result.table["response_logprobs"]):
        assert torch.allclose(sample.old_logprobs, torch.tensor(logprobs))
        assert sample.allowed_ids is not None and len(sample.allowed_ids) == len(sample.response_ids)
    batch = collate(samples[:40], tiny_policy.tokenizer.pad_token_id)
    with torch.no_grad():
        recomputed = token_logprobs(tiny_policy.model, batch)
    for row, sample in enumerate(samples[:40]):
        assert torch.allclose(recomputed[row, -len(sample.response_ids) :], sample.old_logprobs, atol=1e-5)


def test_same_seed_same_rollouts(tiny_policy, twc_tasks, result):
    config = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), group_size=GROUP_SIZE, max_parallel=4, seed=11, progress=False)
    again = run_rollouts(tiny_policy, make_env, twc_tasks, config, policy_version=5)
    assert again.table["action"].tolist() == result.table["action"].tolist()
    assert again.table["response_logprobs"].tolist() == result.table["response_logprobs"].tolist()
    other_seed = RolloutConfig(**{**config.__dict__, "seed": 12})
    other = run_rollouts(tiny_policy, make_env, twc_tasks, other_seed, policy_version=5)
    assert other.table["action"].tolist() != result.table["action"].tolist()


def test_skills_are_injected_into_every_prompt_of_their_episodes(tiny_policy, twc_tasks):
    config = RolloutConfig(group_size=2, max_parallel=4, max_steps=3, seed=1, progress=False)
    skills = {twc_tasks[0].group_id: "take every item before putting anything away"}
    result = run_rollouts(tiny_policy, make_env, twc_tasks[:2], config, skills=skills)
    for sample in result.samples:
        has_skill = SKILL_HEADER in sample.prompt
        assert has_skill == (sample.group_id == twc_tasks[0].group_id)
        if has_skill:
            lines = sample.prompt.split("\n")
            assert lines[0].startswith("Task: ") and lines[1] == SKILL_HEADER
            assert "[take every item before putting anything away]" in sample.prompt
    episode_id = planned_episode_ids(twc_tasks[1:2], config)[0]
    by_episode = run_rollouts(tiny_policy, make_env, twc_tasks[1:2], config, skills={episode_id: "look first"})
    assert {SKILL_HEADER in s.prompt for s in by_episode.samples if s.episode_id == episode_id} == {True}
    assert {SKILL_HEADER in s.prompt for s in by_episode.samples if s.episode_id != episode_id} == {False}


def test_free_generation_reports_invalid_actions(tiny_policy, twc_tasks):
    config = RolloutConfig(
        sampling=SamplingConfig(max_new_tokens=6, temperature=1.0, constrained=False, max_length=1024),
        group_size=2,
        max_steps=4,
        progress=False,
    )
    result = run_rollouts(tiny_policy, make_env, twc_tasks[:2], config)
    table = result.table
    assert result.stats["off_list_action_rate"] > 0.5  # an untrained model rarely spells a valid action
    invalid = ~table["action_valid"]
    assert invalid.any() and (table.loc[invalid, "reward"] == -0.1).all()
    assert result.stats["invalid_action_rate"] == pytest.approx(invalid.mean())
    assert all(sample.allowed_ids is None for sample in result.samples)


class CrashOnceEnvironment:
    """A real TWX environment whose backend 'dies' once, on its third step."""

    crashed = 0
    restarted = 0

    def __init__(self, spec) -> None:
        self.env = make_env(spec)
        self.spec = spec
        self.steps = 0

    def reset(self, seed, split="train"):
        return self.env.reset(seed, split)

    def step(self, action):
        self.steps += 1
        if self.steps == 3 and CrashOnceEnvironment.crashed == 0:
            CrashOnceEnvironment.crashed += 1
            raise EnvironmentCrashedError("simulated JVM crash")
        return self.env.step(action)

    def restart(self) -> None:
        CrashOnceEnvironment.restarted += 1
        self.env.restart()

    def close(self) -> None:
        self.env.close()


def test_a_crashed_episode_is_replayed_from_its_start_and_the_rollout_goes_on(tiny_policy, twc_tasks):
    CrashOnceEnvironment.crashed = CrashOnceEnvironment.restarted = 0
    config = RolloutConfig(group_size=2, max_steps=4, max_parallel=2, progress=False)
    result = run_rollouts(tiny_policy, CrashOnceEnvironment, twc_tasks[:1], config)
    assert CrashOnceEnvironment.crashed == 1 and CrashOnceEnvironment.restarted == 1
    assert result.faults.failed == []
    [replayed] = result.faults.replayed
    assert replayed.reason == ENV_CRASH and replayed.detail == "simulated JVM crash" and replayed.steps == 2
    assert sorted(result.table["episode_id"].unique()) == sorted(planned_episode_ids(twc_tasks[:1], config))
    for _, rows in result.table.groupby("episode_id"):
        assert rows["step"].tolist() == list(range(len(rows))) and rows["done"].iloc[-1]
        assert rows["seed"].nunique() == 1 and rows["seed"].iloc[0] == twc_tasks[0].seed
    assert [(s.episode_id, s.step) for s in result.samples] == list(zip(result.table["episode_id"], result.table["step"]))
    assert result.stats["failed_episodes"] == 0 and result.stats["failed_episode_rate"] == 0
    assert result.stats["episode_replays"] == 1 and result.stats["env_restarts"] == 1 and result.stats["step_timeouts"] == 0
    metrics = rollout_metrics(result.table)
    assert metrics["faults/episode_replays"] == 1 and metrics["faults/failed_episodes"] == 0
    assert metrics["rollout/env_steps"] == len(result.table)
    assert rollout_metrics(result.table, simulated=True)["rollout/env_steps"] == 0  # WM-R1's steps are not the environment's


class AlwaysFailingEnvironment(CrashOnceEnvironment):
    """A real TWX environment whose every second step fails with ``error``."""

    error: Exception = EnvironmentCrashedError("simulated JVM crash")

    def step(self, action):
        self.steps += 1
        if self.steps % 2 == 0:
            raise type(self).error
        return self.env.step(action)


def test_an_environment_that_keeps_failing_stops_the_rollout_naming_it_and_the_tries(tiny_policy, twc_tasks):
    config = RolloutConfig(group_size=1, max_steps=4, max_parallel=1, progress=False, episode_replays=2)
    with pytest.raises(EnvironmentCrashedError) as raised:
        run_rollouts(tiny_policy, AlwaysFailingEnvironment, twc_tasks[:1], config)
    message = str(raised.value)
    assert "textworldexpress environment (game 'twc') keeps failing" in message
    assert "failed on all 3 tries (1 play + 2 replays, rollout.episode_replays)" in message
    assert "simulated JVM crash" in message


def test_an_episode_whose_tries_run_out_on_a_hang_is_left_out_and_counted(tiny_policy, twc_tasks, monkeypatch):
    """A hang (step timeout) on every try points at the task, not at a dead environment: the
    episode is given up, counted as missing, and the others play."""
    tasks = twc_tasks[:2]
    monkeypatch.setattr(HangsOnOneTask, "seed", tasks[0].seed)
    config = RolloutConfig(group_size=1, max_steps=4, max_parallel=1, progress=False, episode_replays=1)
    result = run_rollouts(tiny_policy, HangsOnOneTask, tasks, config)
    planned = planned_episode_ids(tasks, config)
    assert [f.episode_id for f in result.faults.failed] == [planned[0]]
    assert [f.episode_id for f in result.faults.replayed] == [planned[0]]
    assert list(result.table["episode_id"].unique()) == [planned[1]]
    assert result.stats["failed_episodes"] == 1 and result.stats["episode_replays"] == 1
    assert result.stats["step_timeouts"] == 2 and result.stats["failed_episode_rate"] == 0.5


def test_an_environment_that_fails_while_being_built_is_built_again(tiny_policy, twc_tasks):
    calls = []

    def factory(spec):
        calls.append(spec)
        if len(calls) == 1:
            raise EnvironmentCrashedError("simulated JVM death while connecting")
        return make_env(spec)

    config = RolloutConfig(group_size=2, max_steps=3, max_parallel=2, progress=False)
    result = run_rollouts(tiny_policy, factory, twc_tasks[:1], config)
    assert len(calls) == 3 and result.faults.failed == [] and result.faults.env_restarts == 0
    assert result.table["episode_id"].nunique() == 2

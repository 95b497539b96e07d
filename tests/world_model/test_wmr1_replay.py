"""WM-R1's official replay (``methods.wmr1_replay``): the policy's own successes, kept per
task across updates and in the checkpoint, swapped for the first rollout of a group without
a success and scored like any rollout with their stored counts."""

from __future__ import annotations

import copy
import dataclasses

import pandas as pd
import pytest
import torch

from hindsight import algorithms
from hindsight.envs.base import EnvironmentSpec
from hindsight.methods import MethodContext, build_method
from hindsight.methods.wmr1_rewards import wmr1_scores
from hindsight.methods.wmr1_replay import SuccessBuffer, groups_to_replay, replay_own_successes
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.imagination import CALLS_COLUMN, Imagination
from hindsight.rollout.tasks import make_tasks
from hindsight.training.batch import RolloutBatch
from hindsight.training.checkpoint import ResumedRun, resume_rl, save_rl_checkpoint
from hindsight.training.distillation import response_logprobs
from hindsight.training.rl_config import RLConfig
from hindsight.world_model.environment import RecordedTasks, WorldModelSimulator
from hindsight.envs.base import ToyEnvironment
from hindsight.policy.generation import SamplingConfig

SPEC = EnvironmentSpec("toy", "box", {}, max_steps=2)
VALID = ["open box", "look", "wait", "sit down"]
ROLLOUT = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=512), max_parallel=4, progress=False, group_size=4, seed=5)


class BoxEnv(ToyEnvironment):
    """Opening the box wins."""

    def reset(self, seed, split="train"):
        return f"Room {seed}: a box.", {"task": "Your task is to open the box.", "valid_actions": list(VALID)}

    def step(self, action):
        won = action == "open box"
        return "Done." if won else "A room.", 10.0 * won, won, False, {"valid_actions": list(VALID), "won": won}


class ScriptedSimulator(WorldModelSimulator):
    """Every prediction is the same sentence (calls counted as usual)."""

    def predict(self, prompt: str) -> str:
        self.calls += 1
        return "You open the box."


@pytest.fixture(scope="module")
def simulator(tiny_policy):
    recorded = RecordedTasks(run_rollouts(tiny_policy, BoxEnv, make_tasks(SPEC, "train", [0, 1]), dataclasses.replace(ROLLOUT, group_size=1)).table)
    return ScriptedSimulator(tiny_policy, recorded)


@pytest.fixture(scope="module")
def played(tiny_policy, simulator):
    """Real rollouts with in-response world-model calls (up to 2 per step): table and samples."""
    config = dataclasses.replace(ROLLOUT, imagination=Imagination(simulator, calls_per_step=2))
    result = run_rollouts(tiny_policy, BoxEnv, make_tasks(SPEC, "train", [0, 1]), config)
    return result.table, result.samples


def lost(table: pd.DataFrame, group: str) -> pd.DataFrame:
    """The same rows with every episode of ``group`` lost."""
    return table.assign(won=table["won"] & (table["group_id"] != group))


def test_the_buffer_keeps_the_newest_wins_of_each_task(played):
    table, samples = played
    outcomes = table.groupby("episode_id").agg(group=("group_id", "first"), won=("won", "any"))
    assert outcomes["won"].any() and not outcomes["won"].all()
    buffer = SuccessBuffer(capacity=2)
    assert buffer.add_successes(table, samples) == outcomes["won"].sum()
    for group, stored in buffer.episodes.items():
        wins = outcomes[(outcomes["group"] == group) & outcomes["won"]].index
        assert [s.rows["episode_id"].iloc[0] for s in stored] == sorted(wins, key=list(table["episode_id"]).index)[-2:]
        for success in stored:  # rows and samples stay together, step by step
            assert [s.episode_id for s in success.samples] == success.rows["episode_id"].tolist()
            assert [s.step for s in success.samples] == success.rows["step"].tolist()
    replayed = table.assign(source="replay")
    assert buffer.add_successes(replayed, samples) == 0  # a replayed episode is not stored again
    with pytest.raises(ValueError, match="at least 1"):
        SuccessBuffer(capacity=0)


def test_the_trigger_is_the_official_std_and_mean():
    rows = []
    # g: 4 losses (std 0, mean 0) -> replay; h: 1 win in 4 (mean 0.25) -> none; k: 4 wins -> none
    for group, wins in (("g", 0), ("h", 1), ("k", 4)):
        for episode in range(4):
            rows.append({"episode_id": f"{group}{episode}", "group_id": group, "step": 0, "won": episode < wins,
                         "reward": 0.0, "action_valid": True})
    assert groups_to_replay(pd.DataFrame(rows)) == ["g"]


def test_a_replayed_success_replaces_the_first_rollout_and_scores_with_its_stored_counts(tiny_policy, played):
    table, samples = played
    buffer = SuccessBuffer()
    buffer.add_successes(table, samples)
    calls = table.groupby("episode_id")[CALLS_COLUMN].sum()
    group = next(g for g, stored in buffer.episodes.items() if any(calls[s.rows["episode_id"].iloc[0]] > 0 for s in stored))
    # keep only the stored wins of that task that made world-model calls, so the draw has calls
    buffer.episodes = {group: [s for s in buffer.episodes[group] if calls[s.rows["episode_id"].iloc[0]] > 0]}
    stored_ids = {s.rows["episode_id"].iloc[0] for s in buffer.episodes[group]}

    batch = lost(table, group)
    first = batch.loc[batch["group_id"] == group, "episode_id"].iloc[0]
    merged, merged_samples, replayed = replay_own_successes(tiny_policy, batch, samples, buffer, update=3, seed=0)
    assert replayed == 1
    assert first not in set(merged["episode_id"]) and len(merged) == len(merged_samples)
    assert [s.episode_id for s in merged_samples] == merged["episode_id"].tolist()
    rows = merged[merged["episode_id"] == f"replay/{group}/v3"]
    assert (rows["source"] == "replay").all() and rows["won"].any()
    source = next(s for s in buffer.episodes[group] if s.rows["episode_id"].iloc[0] in stored_ids
                  and s.rows[CALLS_COLUMN].tolist() == rows[CALLS_COLUMN].tolist())
    assert rows[CALLS_COLUMN].sum() > 0  # it keeps its stored world-model calls
    # its behaviour log-probs are the current policy's
    replay_samples = [s for s in merged_samples if s.episode_id == f"replay/{group}/v3"]
    current = response_logprobs(tiny_policy.model, source.samples, 16, tiny_policy.tokenizer.pad_token_id)
    for sample, expected in zip(replay_samples, current):
        torch.testing.assert_close(torch.as_tensor(sample.old_logprobs), expected.float())

    # scored like any rollout: its committed steps and its stored calls, no mask
    scores = wmr1_scores(merged, max_steps=2)
    mine = merged[merged["group_id"] == group]
    episodes = list(dict.fromkeys(mine["episode_id"]))
    counts = mine.groupby("episode_id").agg(length=("step", "size"), won=("won", "any"), calls=(CALLS_COLUMN, "sum"))
    expected = algorithms.wm_r1_rewards(
        [counts.loc[e, "length"] for e in episodes], [counts.loc[e, "won"] for e in episodes],
        [counts.loc[e, "calls"] for e in episodes], [group] * len(episodes), max_length=2, max_calls=5,
    )
    assert [scores[e] for e in episodes] == pytest.approx(expected.tolist(), abs=1e-6)
    masked = wmr1_scores(merged, max_steps=2, mask_replayed_calls=True)
    assert masked[f"replay/{group}/v3"] != pytest.approx(scores[f"replay/{group}/v3"])

    # groups with a success are left alone, and the buffer took this batch's wins afterwards
    assert set(merged.loc[merged["group_id"] != group, "episode_id"]) == set(batch.loc[batch["group_id"] != group, "episode_id"])
    assert len(buffer.episodes[group]) == len(stored_ids)  # the replaced group had no win to add
    others = set(batch.loc[batch["won"] & (batch["group_id"] != group), "group_id"])
    assert others and set(buffer.episodes) == {group} | others


def test_the_method_replays_its_own_wins_and_the_checkpoint_keeps_them(tiny_policy, simulator, played, tmp_path):
    table, samples = played
    rl = RLConfig(algorithm="wmr1", group_size=4)
    method = build_method(rl, MethodContext(world_model=simulator))
    assert (method.settings.replay_source, method.settings.replay_per_task) == ("own_successes", 8)
    method.start(tiny_policy)
    first = RolloutBatch(table=table, samples=list(samples), played=table)
    method.after_rollout(tiny_policy, first, ROLLOUT, rl, seed=0, update=0)
    assert first.metrics["world_model/replayed_groups"] == 0  # nothing stored yet
    stored = len(method.buffer)
    assert stored == table.groupby("episode_id")["won"].any().sum() == first.metrics["world_model/replay_buffer_episodes"]

    group = table["group_id"].iloc[0]
    second = RolloutBatch(table=lost(table, group), samples=list(samples), played=lost(table, group))
    method.after_rollout(tiny_policy, second, ROLLOUT, rl, seed=0, update=1)
    assert second.metrics["world_model/replayed_groups"] == 1
    assert (second.table.loc[second.table["source"] == "replay", "group_id"] == group).all()

    # the buffer goes into the checkpoint and comes back in a resumed run
    policy = copy.deepcopy(tiny_policy)  # resume_rl loads the saved weights into it
    run = ResumedRun(2, [], None, None, method_state=method.state_dict())
    save_rl_checkpoint(tmp_path, run, policy, torch.optim.AdamW(policy.model.parameters(), lr=1e-3), {})
    state = resume_rl(tmp_path, policy, torch.optim.AdamW(policy.model.parameters(), lr=1e-3), {})
    fresh = build_method(rl, MethodContext(world_model=simulator))
    assert len(fresh.buffer) == 0
    fresh.load_state_dict(state.method_state)
    assert {g: [s.rows["episode_id"].iloc[0] for s in v] for g, v in fresh.buffer.episodes.items()} == {
        g: [s.rows["episode_id"].iloc[0] for s in v] for g, v in method.buffer.episodes.items()
    }
    assert len(fresh.buffer) == len(method.buffer) > 0

    expert = build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"replay_source": "expert_episodes"}}))
    assert expert.counting()["mask_replayed_calls"] and not method.counting()["mask_replayed_calls"]
    with pytest.raises(ValueError, match="replay_source must be one of"):
        build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"replay_source": "mine"}}))

"""Expert replay as the environment (EMPO): matching, the Patch Module, the history hook of
the live episode, decoder candidates where no valid actions were recorded, and the
free-text action normalisation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from hindsight.algorithms import action_type, empo_action_score, normalize_action
from hindsight.data.external import load_external_trajectories
from hindsight.envs.base import EnvironmentConfigError
from hindsight.envs.expert_replay import ExpertReplayEnvironment, ReplaySet, expert_trajectories
from hindsight.policy.prompts import PromptConfig
from hindsight.rollout.live_episode import Episode
from hindsight.rollout.tasks import TaskRef

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"


def _table(actions, *, won=True, valid=None, responses=None, episode_id="e0", task_type="kitchen", split="train"):
    rows = []
    for step, action in enumerate(actions):
        rows.append(
            {
                "episode_id": episode_id, "task": "Your task is to cook.", "task_type": task_type, "split": split,
                "step": step, "observation": f"state {step}", "valid_actions": (valid or [[]] * len(actions))[step],
                "action": action, "response": (responses or actions)[step], "won": won and step == len(actions) - 1,
                "source": "expert",
            }
        )
    return pd.DataFrame(rows)


def _env(table, patch_threshold=2, include_thought=True):
    replay = ReplaySet({"train": expert_trajectories(table)})
    return ExpertReplayEnvironment(replay, replay.spec(), patch_threshold=patch_threshold, include_thought=include_thought)


def test_normalisation_case_articles_in_on_and_verb():
    assert normalize_action("Put the Apple ON a table.") == "put apple in table"
    assert normalize_action("put apple in table") == "put apple in table"
    assert action_type("  Open the fridge") == "open"
    assert empo_action_score("put an apple on the table", "Put apple in table") == 1.0
    assert empo_action_score("put apple in fridge", "put apple in table") == 0.5
    assert empo_action_score("the", "put apple in table") == 0.0  # nothing left: unparsable


def test_matched_steps_advance_and_win_with_empo_rewards():
    env = _env(_table(["open fridge", "take egg"]))
    observation, info = env.reset(0, "train")
    assert observation == "state 0" and info["task"] == "Your task is to cook."
    observation, reward, terminated, _, info = env.step("Open the fridge")
    assert (observation, reward, terminated) == ("state 1", pytest.approx(1.0), False)
    assert info["source"] == "rollout" and info["action_valid"] and info["history_action"] == "Open the fridge"
    _, reward, terminated, _, info = env.step("take egg")
    assert terminated and info["won"] and info["score"] == 1.0


def test_patch_module_replaces_history_then_ends_past_threshold():
    responses = ["Thought: cold food is north.\nAction: go north", "open fridge", "take egg", "eat egg"]
    table = _table(["go north", "open fridge", "take egg", "eat egg"], responses=responses)
    env = _env(table, patch_threshold=2)
    env.reset(0)
    observation, reward, terminated, _, info = env.step("go south")  # same verb: 0.1 + 0.9 * 0.5
    assert reward == pytest.approx(0.55) and not terminated and observation == "state 1"
    assert info["source"] == "patched" and not info["action_valid"]
    assert info["history_action"] == "Thought: cold food is north. Action: go north"
    _, reward, terminated, _, info = env.step("eat egg")  # other verb: 0.1 + 0.09
    assert reward == pytest.approx(0.19) and info["source"] == "patched" and info["history_action"] == "open fridge"
    _, _, terminated, _, info = env.step("take egg")
    assert not terminated and info["source"] == "rollout"
    _, reward, terminated, _, info = env.step("drop egg")  # third mismatch: past the threshold
    assert terminated and not info["won"] and info["source"] == "rollout" and info["score"] == pytest.approx(0.25)


def test_threshold_zero_stops_at_first_mismatch_and_patched_run_is_not_won():
    env = _env(_table(["a1 x", "a2 y"]), patch_threshold=0)
    env.reset(0)
    _, _, terminated, _, info = env.step("wrong")
    assert terminated and not info["won"] and info["score"] == 0.0
    env = _env(_table(["a1 x", "a2 y"]), patch_threshold=1)
    env.reset(0)
    env.step("wrong")
    _, _, terminated, _, info = env.step("a2 y")
    assert terminated and not info["won"]  # reached the end, but with a patch


def test_live_episode_records_patched_source_and_expert_action_in_history():
    table = _table(["open fridge", "take egg", "eat egg"])
    env = _env(table)
    task = TaskRef(env.spec, 0, "train")
    episode = Episode("ep", task, env, max_steps=10, prompt_config=PromptConfig())
    episode.start()
    row = episode.play("take egg", "take egg", source="rollout", policy_version=0)
    assert row["source"] == "patched" and row["action"] == "take egg" and not row["action_valid"]
    assert episode.history == [("state 0", "open fridge")]
    assert "Action 0: open fridge" in episode.prompt()
    row = episode.play("take egg", "take egg", source="rollout", policy_version=0)
    assert row["source"] == "rollout" and episode.history[-1] == ("state 1", "take egg")


def test_candidates_without_valid_actions_come_from_the_task_type():
    table = pd.concat(
        [_table(["open fridge", "take egg"], episode_id="e0"), _table(["go north", "take apple"], episode_id="e1"),
         _table(["read book"], episode_id="e2", task_type="library")]
    )
    found = {t.episode_id: t for t in expert_trajectories(table)}
    assert found["e0"].valid_actions[0] == ("go north", "open fridge", "take apple", "take egg")
    assert found["e2"].valid_actions[0] == ("read book",)
    recorded = _table(["open fridge"], valid=[["look", "open fridge"]])
    assert expert_trajectories(recorded)[0].valid_actions[0] == ("look", "open fridge")


def test_failed_demonstrations_are_skipped_and_an_empty_set_is_a_clear_error():
    table = pd.concat([_table(["x"], episode_id="ok"), _table(["y"], episode_id="lost", won=False)])
    assert [t.episode_id for t in expert_trajectories(table)] == ["ok"]
    with pytest.raises(EnvironmentConfigError, match="no successful expert trajectory"):
        expert_trajectories(table[table["episode_id"] == "lost"])
    with pytest.raises(EnvironmentConfigError, match="lacks column"):
        expert_trajectories(table.drop(columns=["response"]))


def test_conversation_file_replays_with_thoughts():
    table = load_external_trajectories(EXAMPLES / "sharegpt_alfworld.json")
    trajectories = expert_trajectories(table)
    assert [t.episode_id for t in trajectories] == ["external/sharegpt_alfworld/alfworld_0"]
    assert trajectories[0].thoughts[0] == "Thought: The egg is probably in the fridge."
    assert trajectories[0].actions == ("go to fridge 1", "open fridge 1", "take egg 1 from fridge 1")


def test_heldout_split_is_deterministic_and_disjoint():
    table = pd.concat([_table(["x"], episode_id=f"e{i}") for i in range(8)] + [_table(["z"], episode_id="d", split="dev")])
    trajectories = expert_trajectories(table)
    first = ReplaySet.split_off(trajectories, 0.25, seed=3)
    again = ReplaySet.split_off(trajectories, 0.25, seed=3)
    train = {t.episode_id for t in first.by_split["train"]}
    test = {t.episode_id for t in first.by_split["test"]}
    assert len(train) == 6 and len(test) == 3 and "d" in test and not train & test
    assert [t.episode_id for t in again.by_split["test"]] == [t.episode_id for t in first.by_split["test"]]


def test_empo_source_without_training_trajectories_is_a_clear_error():
    from hindsight.config import EmpoConfig
    from hindsight.runs.empo_run import EmpoSource

    table = _table(["x"], split="dev")
    with pytest.raises(EnvironmentConfigError, match="train fold"):
        EmpoSource.from_table(table, EmpoConfig(), seed=0)


def test_the_format_term_reads_the_thought_of_the_whole_response():
    table = _table(["open fridge", "take egg", "eat egg"])
    task_env = _env(table)
    episode = Episode("ep", TaskRef(task_env.spec, 0, "train"), task_env, max_steps=10, prompt_config=PromptConfig())
    episode.start()
    # matched with a well-formed thought: 0.1 + 0.9
    row = episode.play("open fridge", "Thought: the egg is cold.\nAction: open fridge", source="rollout", policy_version=0)
    assert row["reward"] == pytest.approx(1.0) and row["action_valid"]
    # matched, but the thought is empty: no format term
    row = episode.play("take egg", "Thought:\nAction: take egg", source="rollout", policy_version=0)
    assert row["reward"] == pytest.approx(0.9) and row["action_valid"]
    # a bare action (no thought) keeps the plain check; step() is the same as a bare response
    row = episode.play("eat egg", "eat egg", source="rollout", policy_version=0)
    assert row["reward"] == pytest.approx(1.0) and row["won"]

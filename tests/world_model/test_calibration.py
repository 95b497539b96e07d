"""The world model's sources and its calibration on the policy's own episodes: the start
policy's real episodes (played by the rollout engine on a real toy game, a tiny policy)
bring their lost endings into the training rows; the judged-endings and imagination tables
count a hand-built case right; a judgement read from the first answer tokens is the one the
full answer gives (a tiny world model trained here)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from hindsight.envs.base import EnvironmentSpec, ToyEnvironment
from hindsight.policy.generation import SamplingConfig, generate_text
from hindsight.policy.model import build_policy
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.rollout.engine import RolloutConfig
from hindsight.rollout.tasks import make_tasks
from hindsight.training.sft import SFTConfig, train_sft
from hindsight.evaluation.world_model_judgement import (
    calibration_metrics,
    calibration_summary,
    first_judgement,
    imagination_summary,
    judged_endings,
    judging_tokens,
    step_prompts,
)
from hindsight.rollout.policy_episodes import POLICY_PREFIX, episode_sources, heldout_episodes, learnt_episodes, play_policy_episodes
from hindsight.world_model.transitions import FAILED_MARKER, SOLVED_MARKER, ended_lost, is_failed, is_solved, transition_examples

SPEC = EnvironmentSpec("toy", "buttons", {}, max_steps=3)
VALID = ["press red", "press blue", "look"]


class ButtonsEnv(ToyEnvironment):
    """Press the blue button: blue wins, red ends the episode lost, look changes nothing."""

    def reset(self, seed, split="train"):
        return f"Panel {seed}: a red and a blue button.", {"task": "Press the blue button.", "valid_actions": list(VALID)}

    def step(self, action):
        won, over = action == "press blue", action in ("press red", "press blue")
        return "The panel.", 10.0 if won else 0.0, over, False, {"valid_actions": list(VALID), "won": won}


def _gold(seeds) -> pd.DataFrame:
    return pd.DataFrame([{
        "episode_id": f"gold/{seed}", "group_id": f"toy/buttons/train/{seed}", "task_type": "buttons", "source": "expert",
        "task": "Press the blue button.", "step": 0, "observation": f"Panel {seed}: a red and a blue button.", "action": "press blue",
        "won": True, "done": True, "reward": 10.0, "action_valid": True,
    } for seed in seeds])


@pytest.fixture(scope="module")
def policy_episodes(tiny_policy) -> pd.DataFrame:
    config = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=768), max_parallel=8, progress=False, group_size=6, seed=0)
    table, stats = play_policy_episodes(tiny_policy, ButtonsEnv, make_tasks(SPEC, "train", range(4)), config)
    assert stats["episodes"] == 24
    return table


def test_the_policy_source_brings_its_lost_endings_into_the_training_rows(policy_episodes):
    assert policy_episodes["episode_id"].str.startswith(POLICY_PREFIX).all()
    lost = [eid for eid, episode in policy_episodes.groupby("episode_id") if ended_lost(episode.sort_values("step"), SPEC.max_steps)]
    assert lost, "the tiny policy pressed red in none of 24 episodes"
    episodes = learnt_episodes(
        gold=_gold(range(4)), rollouts=_gold([]), random=_gold([]), policy=policy_episodes, gold_share=1.0, policy_share=1.0, heldout_fraction=0.0,
    )
    examples = transition_examples(episodes, history=1, max_chars=600, heldout_fraction=0.0, max_steps=SPEC.max_steps)
    examples = examples.assign(source=episode_sources(examples))
    train = examples[~examples["heldout"]]
    endings = train[train["terminal"]].set_index("episode_id")
    for episode_id in lost:  # each lost real episode is a training row whose answer is its failed ending
        assert endings.loc[episode_id, "response"] == FAILED_MARKER and endings.loc[episode_id, "source"] == "policy"
    # every policy episode gives training rows (one cut at the limit has 3 steps, so 2 examples)
    assert set(train.loc[train["source"] == "policy", "episode_id"]) == set(policy_episodes["episode_id"])
    assert (train.loc[train["source"] == "expert", "response"] == SOLVED_MARKER).all()


def test_a_share_keeps_every_held_out_episode_and_draws_the_others(policy_episodes):
    held = set(heldout_episodes(policy_episodes, 0.5)["episode_id"])
    assert 0 < len(held) < policy_episodes["episode_id"].nunique()
    none = learnt_episodes(gold=_gold([0]), rollouts=_gold([]), random=_gold([]), policy=policy_episodes, gold_share=1.0, policy_share=0.0, heldout_fraction=0.5)
    assert set(none.loc[none["episode_id"].str.startswith(POLICY_PREFIX), "episode_id"]) == held
    every = learnt_episodes(gold=_gold([0]), rollouts=_gold([]), random=_gold([]), policy=policy_episodes, gold_share=1.0, policy_share=1.0, heldout_fraction=0.5)
    assert set(every["episode_id"]) == set(policy_episodes["episode_id"]) | {"gold/0"}


def _episode(episode_id: str, actions: list[str], *, won: bool, done: bool, group: int = 0) -> list[dict]:
    last = len(actions) - 1
    return [{
        "episode_id": episode_id, "group_id": f"toy/buttons/train/{group}", "task_type": "buttons", "task": "Press blue.", "source": "rollout",
        "step": k, "observation": f"{episode_id} view {k}", "action": action, "won": won and k == last, "done": done and k == last,
        "reward": 10.0 if won and k == last else 0.0, "action_valid": True,
    } for k, action in enumerate(actions)]


# (real episode, the world model's answer at each of its steps); max_steps 3
HAND_BUILT = {
    "w1": (dict(actions=["look", "press blue"], won=True, done=True), ["v", SOLVED_MARKER]),            # won, judged won at its end
    "w2": (dict(actions=["press blue"], won=True, done=True), ["v"]),                                 # won, never judged ended
    "w3": (dict(actions=["look", "look", "press blue"], won=True, done=True), [SOLVED_MARKER, "v", "v"]),  # won, judged won too early
    "e1": (dict(actions=["look", "press red"], won=False, done=True), ["v", FAILED_MARKER]),           # ended lost, judged lost at its end
    "e2": (dict(actions=["press red"], won=False, done=True), [SOLVED_MARKER]),                       # ended lost, judged won
    "c1": (dict(actions=["look", "look", "look"], won=False, done=True), ["v", "v", "v"]),            # cut, never ended
    "c2": (dict(actions=["look", "look", "look"], won=False, done=True), ["v", FAILED_MARKER, "v"]),  # cut, judged lost early
    "c3": (dict(actions=["look", "look", "look"], won=False, done=True), ["v", "v", SOLVED_MARKER]),  # cut, judged won
}


def _hand_built_endings() -> pd.DataFrame:
    table = pd.DataFrame([row for eid, (episode, _) in HAND_BUILT.items() for row in _episode(eid, **episode)])
    answers = {f"{eid} view {k}": answer for eid, (_, said) in HAND_BUILT.items() for k, answer in enumerate(said)}

    def predict(prompts: list[str]) -> list[str]:  # the answer stored for the prompt's current view
        return [answers[prompt.rsplit("Observation: ", 1)[1].splitlines()[0]] for prompt in prompts]

    return judged_endings(table, predict, history=1, max_chars=600, max_steps=3)


def test_the_judged_endings_and_their_table_on_a_hand_built_case():
    endings = _hand_built_endings().set_index("episode_id")
    assert endings["real_ending"].to_dict() == {
        "c1": "lost_cut", "c2": "lost_cut", "c3": "lost_cut", "e1": "lost_ended", "e2": "lost_ended", "w1": "won", "w2": "won", "w3": "won",
    }
    assert endings["judged_ending"].to_dict() == {
        "c1": "not_ended", "c2": "lost", "c3": "won", "e1": "lost", "e2": "won", "w1": "won", "w2": "not_ended", "w3": "won",
    }
    assert endings.loc["w3", "judged_step"] == 0 and endings.loc["c1", "judged_step"] == -1
    assert endings.index[endings["ending_agrees"]].tolist() == ["c1", "e1", "w1"]
    summary = calibration_summary(endings.reset_index()).set_index("real_ending")
    expected = {  # episodes, judged won / lost / not ended, outcome agreement, ending agreement
        "won": (3, 2, 0, 1, 2 / 3, 1 / 3),
        "lost": (5, 2, 2, 1, 3 / 5, 2 / 5),
        "lost_ended": (2, 1, 1, 0, 1 / 2, 1 / 2),
        "lost_cut": (3, 1, 1, 1, 2 / 3, 1 / 3),
        "all": (8, 4, 2, 2, 5 / 8, 3 / 8),
    }
    for name, (episodes, won, lost, open_, outcome, ending) in expected.items():
        row = summary.loc[name]
        assert (row["episodes"], row["judged_won"], row["judged_lost"], row["judged_not_ended"]) == (episodes, won, lost, open_), name
        assert row["outcome_agreement"] == pytest.approx(outcome) and row["ending_agreement"] == pytest.approx(ending), name


def test_the_imagined_won_share_stands_next_to_the_real_success_rate_of_the_same_tasks():
    imagined = pd.DataFrame(
        _episode("i1", ["press blue"], won=True, done=True, group=0) + _episode("i2", ["press blue"], won=True, done=True, group=0)
        + _episode("i3", ["look", "press red"], won=False, done=True, group=1) + _episode("i4", ["press blue"], won=True, done=True, group=1)
    )
    real = pd.DataFrame(
        _episode("r1", ["press blue"], won=True, done=True, group=0) + _episode("r2", ["press red"], won=False, done=True, group=0)
        + _episode("r3", ["press red"], won=False, done=True, group=1)
        + _episode("r4", ["press blue"], won=True, done=True, group=7)  # a task not imagined: left out
    )
    summary = imagination_summary(imagined, real).set_index("task_type")
    assert list(summary.index) == ["buttons", "all"]
    row = summary.loc["all"]
    assert (row["tasks"], row["imagined_episodes"], row["real_episodes"]) == (2, 4, 3)
    assert row["imagined_won_share"] == pytest.approx(3 / 4) and row["real_success_rate"] == pytest.approx(1 / 3)
    metrics = calibration_metrics(calibration_summary(_hand_built_endings()), summary.reset_index())
    assert metrics["world_model/imagined_won_share"] == pytest.approx(3 / 4)
    assert metrics["world_model/imagined_real_success_rate"] == pytest.approx(1 / 3)
    assert metrics["world_model/calibration/won_outcome_agreement"] == pytest.approx(2 / 3)
    assert metrics["world_model/calibration/lost_outcome_agreement"] == pytest.approx(3 / 5)
    empty = calibration_metrics(calibration_summary(_hand_built_endings().head(0)), imagination_summary(imagined.head(0), real.head(0)))
    assert empty["world_model/calibration/won_episodes"] == 0 and math.isnan(empty["world_model/imagined_won_share"])


def test_first_judgement_takes_the_first_outcome():
    assert first_judgement(["a view", FAILED_MARKER, SOLVED_MARKER]) == ("lost", 1)
    assert first_judgement([SOLVED_MARKER + " more", FAILED_MARKER]) == ("won", 0)
    assert first_judgement(["a view", "another"]) == ("not_ended", -1)


def test_a_judgement_from_the_first_answer_tokens_is_the_full_answers(policy_episodes):
    """A tiny world model trained on the policy's episodes: greedy answers cut at
    ``judging_tokens`` say won / lost / neither exactly as the full answers do."""
    torch.manual_seed(0)
    examples = transition_examples(policy_episodes, history=1, max_chars=600, heldout_fraction=0.0, max_steps=SPEC.max_steps)
    tokenizer = train_tokenizer(examples["prompt"].tolist() + examples["response"].tolist(), vocab_size=300)
    world_model = build_policy("tiny", tokenizer, seed=0)
    config = SFTConfig(learning_rate=3e-3, weight_decay=0.0, batch_size=8, max_steps=30, warmup_ratio=0.05, max_length=256, log_every=10)
    train_sft(world_model, examples, config)
    prompts = step_prompts(policy_episodes, history=1, max_chars=600)["prompt"].tolist()
    budget = judging_tokens(world_model.tokenizer)
    assert budget < 24
    cut = generate_text(world_model, prompts, max_new_tokens=budget, stop_at_newline=True, max_length=256)
    full = generate_text(world_model, prompts, max_new_tokens=24, stop_at_newline=True, max_length=256)

    def kind(answer: str) -> str:
        return "won" if is_solved(answer) else "lost" if is_failed(answer) else "view"

    assert [kind(answer) for answer in cut] == [kind(answer) for answer in full]
    assert {kind(answer) for answer in full} & {"won", "lost"}, "the trained world model never answered an outcome"

"""Held-out evaluation on real TextWorldExpress tasks with a tiny (untrained) policy: the
seen / unseen task folds, every agent labelled, episode ids that never collide across
agents (two decodings of one policy play the same tasks), and several trials per task, each
with its own seed, the first equal to the single-trial evaluation."""

from __future__ import annotations

import dataclasses

import pytest

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.evaluation.heldout import HeldoutConfig, HeldoutPlay, evaluate_agents, heldout_evaluator, heldout_tasks
from hindsight.evaluation.metrics import success_summary, wilson_interval
from hindsight.evaluation.pass_k import pass_k_summary
from hindsight.params import build
from hindsight.policy.model import build_policy
from hindsight.policy.prompts import build_prompt
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.rollout.engine import RolloutConfig
from hindsight.policy.generation import SamplingConfig

SPEC = EnvironmentSpec(
    "textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=3
)
HELDOUT = HeldoutConfig(
    play=HeldoutPlay(episodes_per_game=2, splits=["seen", "unseen"], decodings={"sampled": {"temperature": 0.4}, "greedy": {"temperature": 0.0}}),
    seen_seed_offset=500, seed=7,
)


@pytest.fixture(scope="module")
def tiny_policy():
    """A tiny policy with a tokenizer trained on the first prompts of a few tasks."""
    env = make_env(SPEC)
    try:
        texts = []
        for seed in env.seeds("train", 3):
            observation, info = env.reset(seed, "train")
            texts.append(build_prompt(info["task"], [], observation, info["valid_actions"]))
            texts += list(info["valid_actions"])
    finally:
        env.close()
    return build_policy("tiny", train_tokenizer(texts, vocab_size=400), seed=0, device="cpu")


@pytest.fixture(scope="module")
def evaluation(tiny_policy):
    settings = RolloutConfig(sampling=SamplingConfig(max_length=768), progress=False)
    return evaluate_agents(tiny_policy, [SPEC], make_env, settings, HELDOUT, policy_label="stage1", include_random=True)


def test_heldout_tasks_come_from_the_right_folds():
    tasks = heldout_tasks([SPEC], HELDOUT)
    assert [t.split for t in tasks["seen"]] == ["train", "train"]
    assert all(t.seed >= 500 for t in tasks["seen"])
    assert [t.split for t in tasks["unseen"]] == ["test", "test"]


def test_unseen_types_play_the_test_fold_of_task_types_never_trained_on():
    held_out = EnvironmentSpec("textworldexpress", "cookingworld", {"numLocations": 1, "numIngredients": 1}, max_steps=3)
    config = dataclasses.replace(
        HELDOUT, play=HeldoutPlay(episodes_per_game=2, splits=["unseen_types"]), unseen_type_specs=[held_out]
    )
    tasks = heldout_tasks([SPEC], config)["unseen_types"]
    assert [(t.spec.game, t.split) for t in tasks] == [("cookingworld", "test")] * 2
    with pytest.raises(ValueError, match="environment.heldout_games"):
        heldout_tasks([SPEC], dataclasses.replace(config, unseen_type_specs=[]))


def test_split_episodes_sets_one_splits_tasks_per_game_and_is_checked():
    config = dataclasses.replace(HELDOUT, play=HeldoutPlay(episodes_per_game=2, split_episodes={"unseen": 5}))
    tasks = heldout_tasks([SPEC], config)
    assert (len(tasks["seen"]), len(tasks["unseen"])) == (2, 5)
    assert [t.seed for t in tasks["unseen"][:2]] == [t.seed for t in heldout_tasks([SPEC], HELDOUT)["unseen"]]
    built = build(HeldoutPlay, {"episodes_per_game": 3, "split_episodes": {"seen": 1}}, "evaluation.heldout")
    assert (built.episodes_for("seen"), built.episodes_for("unseen")) == (1, 3)
    with pytest.raises(ValueError, match=r"unknown split\(s\) \['test'\]"):
        HeldoutPlay(split_episodes={"test": 4})
    for bad in (0, -1, 2.5, True, "4"):
        with pytest.raises(ValueError, match="split_episodes.unseen must be a positive integer"):
            HeldoutPlay(split_episodes={"unseen": bad})


def test_a_task_type_cannot_be_both_trained_and_held_out():
    from hindsight.config.project import EnvironmentConfig, GameConfig

    with pytest.raises(ValueError, match="never trained on; also in games: \\['twc'\\]"):
        EnvironmentConfig(games=[GameConfig("twc")], heldout_games=[GameConfig("twc")])
    environment = EnvironmentConfig(games=[GameConfig("twc")], heldout_games=[GameConfig("cookingworld")])
    assert [spec.game for spec in environment.heldout_specs()] == ["cookingworld"]


def test_every_agent_plays_every_task_once(evaluation):
    assert set(evaluation["agent"]) == {"stage1-sampled", "stage1-greedy", "random"}
    episodes = evaluation.drop_duplicates("episode_id")
    counts = episodes.groupby(["agent", "eval_split"]).size()
    assert counts.tolist() == [2] * 6
    assert evaluation.groupby("episode_id")["agent"].nunique().max() == 1


def test_episode_ids_carry_their_agent(evaluation):
    pairs = zip(evaluation["agent"], evaluation["episode_id"])
    assert all(episode_id.startswith(agent + ":") for agent, episode_id in pairs)
    summary = success_summary(evaluation)
    assert summary.loc[summary["task_type"] == "all", "episodes"].tolist() == [2] * 6


def test_several_trials_per_task_each_with_its_own_seed(tiny_policy, evaluation):
    config = dataclasses.replace(HELDOUT, play=HeldoutPlay(episodes_per_game=2, splits=["unseen"], decodings={"sampled": {"temperature": 0.4}}, trials_per_task=2))
    settings = RolloutConfig(sampling=SamplingConfig(max_length=768), progress=False)
    episodes = evaluate_agents(tiny_policy, [SPEC], make_env, settings, config, policy_label="stage1", include_random=True)
    per_task = episodes.drop_duplicates("episode_id").groupby(["agent", "group_id"])["trial"].agg(sorted)
    assert per_task.tolist() == [[0, 1]] * 4  # 2 agents x 2 tasks, each played in trials 0 and 1
    assert {episode_id.split("/r")[-1].split("/")[0] for episode_id in episodes["episode_id"]} == {"7", "8"}  # seed + trial
    # trial 0 is the single-trial evaluation: the same episodes, action for action
    single = evaluation[(evaluation["agent"].isin(["stage1-sampled", "random"])) & (evaluation["eval_split"] == "unseen")]
    first = episodes[episodes["trial"] == 0]
    assert first["episode_id"].tolist() == single["episode_id"].tolist()
    assert first["action"].tolist() == single["action"].tolist()
    assert set(evaluation["trial"]) == {0}
    summary = pass_k_summary(episodes, resamples=20)
    assert sorted(summary["k"].unique()) == [1, 2]


def test_trials_per_task_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="trials_per_task"):
        HeldoutPlay(trials_per_task=0)
    assert HeldoutPlay().trials_per_task == 1


def test_the_random_floor_replays_as_the_rollout_settings_say(monkeypatch):
    from hindsight.evaluation import heldout

    seen = {}

    def random_agent(*args, **kwargs):
        seen.update(kwargs)
        raise StopIteration

    monkeypatch.setattr(heldout, "run_random_agent", random_agent)
    config = dataclasses.replace(HELDOUT, play=HeldoutPlay(episodes_per_game=2, splits=["unseen"], decodings={}))
    with pytest.raises(StopIteration):
        evaluate_agents(None, [SPEC], make_env, RolloutConfig(episode_replays=0, progress=False), config, include_random=True)
    assert seen["episode_replays"] == 0


def test_the_rl_loops_evaluator_logs_a_curve_point_per_split_and_decoding(tiny_policy):
    """Every decoding's success over all task types with its Wilson 95% interval and its
    episode count (``heldout/{split}/{decoding}/...``); the first decoding's per-task-type
    rates stay under ``eval/{split}/{task_type}/...``."""
    settings = RolloutConfig(sampling=SamplingConfig(max_length=768), progress=False)
    metrics = heldout_evaluator([SPEC], settings, HELDOUT)(tiny_policy, 0)
    for split in ("seen", "unseen"):
        for decoding in ("sampled", "greedy"):
            prefix = f"heldout/{split}/{decoding}"
            rate, episodes = metrics[f"{prefix}/success_rate"], metrics[f"{prefix}/episodes"]
            assert episodes == 2.0
            low, high = wilson_interval(round(rate * episodes), int(episodes))
            assert (metrics[f"{prefix}/ci_low"], metrics[f"{prefix}/ci_high"]) == pytest.approx((low, high))
        assert metrics[f"heldout/{split}/sampled/success_rate"] == metrics[f"eval/{split}/all/success_rate"]
    assert not any(key.startswith("eval/") and "greedy" in key for key in metrics)

"""The teacher fit's examples (``stage1.teacher_fit``): every step of a won episode twice,
without and with the skill the policy wrote for it, the played action the target; lost
episodes and episodes without a skill give none; the mixture keeps the Stage-1 rows.

Built on a real episode (TextWorldExpress twc gold path) and the prompts the engine builds
for it (``episode_prompts``)."""

from __future__ import annotations

import copy
import dataclasses

import pandas as pd
import pytest

from hindsight.config import Stage1Config, TeacherFitConfig, project_settings
from hindsight.pipelines.stage1.nodes import fit_stage1_teacher
from hindsight.policy.encoding import StepSample
from hindsight.policy.prompts import episode_prompts
from hindsight.skills import episodes_from_table
from hindsight.policy.skill_injection import injected_skill, remove_skill
from hindsight.stage1.teacher_fit import FIT_KINDS, fit_mixture, teacher_fit_pairs
from hindsight.training.sft import SFTConfig, train_sft


@pytest.fixture(scope="module")
def played(recorded_tables):
    table = recorded_tables["twc_gold"]
    (episode,) = episodes_from_table(table)
    assert episode.success and len(episode.steps) >= 3
    prompts = episode_prompts(
        table["task"].iloc[0], table["observation"].tolist(), table["action"].tolist(), table["valid_actions"].tolist()
    )
    samples = [
        StepSample(episode_id=episode.episode_id, step=step.step, prompt=prompt, prompt_ids=[], response_ids=[])
        for step, prompt in zip(episode.steps, prompts)
    ]
    return episode, samples


def test_every_step_of_a_won_episode_comes_without_and_with_its_skill(played):
    episode, samples = played
    skill = f"do: {episode.steps[0].action}; {episode.steps[-1].action}"
    pairs = teacher_fit_pairs([episode], samples, {episode.episode_id: skill})
    assert len(pairs) == 2 * len(episode.steps)
    assert list(pairs["kind"]) == ["fit_plain", "fit_skill"] * len(episode.steps)
    plain, skilled = pairs[pairs["kind"] == "fit_plain"], pairs[pairs["kind"] == "fit_skill"]
    assert list(plain["prompt"]) == [sample.prompt for sample in samples]
    assert all(injected_skill(text) == skill for text in skilled["prompt"])
    assert [remove_skill(text) for text in skilled["prompt"]] == list(plain["prompt"])
    played_actions = [step.response or step.action for step in episode.steps]
    assert list(plain["response"]) == played_actions and list(skilled["response"]) == played_actions


def test_with_an_unrelated_skill_each_step_also_comes_under_it(played):
    episode, samples = played
    own, other = f"do: {episode.steps[0].action}", "do: cook carrot; eat carrot"
    pairs = teacher_fit_pairs([episode], samples, {episode.episode_id: own}, {episode.episode_id: other})
    assert list(pairs["kind"]) == list(FIT_KINDS) * len(episode.steps)
    unrelated = pairs[pairs["kind"] == "fit_unrelated"]
    assert all(injected_skill(text) == other for text in unrelated["prompt"])
    assert [remove_skill(text) for text in unrelated["prompt"]] == [sample.prompt for sample in samples]
    assert list(unrelated["response"]) == [step.response or step.action for step in episode.steps]
    # an episode the assignment gave no unrelated skill keeps its two rows
    assert len(teacher_fit_pairs([episode], samples, {episode.episode_id: own}, {})) == 2 * len(episode.steps)


def test_lost_episodes_and_episodes_without_a_skill_give_nothing(played):
    episode, samples = played
    lost = dataclasses.replace(episode, success=False)
    assert teacher_fit_pairs([lost], samples, {episode.episode_id: "avoid: look"}).empty
    assert teacher_fit_pairs([episode], samples, {}).empty
    assert teacher_fit_pairs([episode], samples, {episode.episode_id: ""}).empty


def test_a_multiturn_sample_or_a_missing_step_is_refused_by_name(played):
    episode, samples = played
    skill = {episode.episode_id: f"do: {episode.steps[0].action}"}
    multiturn = [dataclasses.replace(samples[0], prompt="")]
    with pytest.raises(ValueError, match=rf"step 0 of episode '{episode.episode_id}'.*multi-turn"):
        teacher_fit_pairs([episode], multiturn, skill)
    stray = [dataclasses.replace(samples[0], step=99)]
    with pytest.raises(ValueError, match="sample for step 99 but no such step"):
        teacher_fit_pairs([episode], stray, skill)


def test_the_mixture_repeats_the_pairs_beside_the_stage1_rows(played):
    episode, samples = played
    pairs = teacher_fit_pairs([episode], samples, {episode.episode_id: f"do: {episode.steps[0].action}"})
    stage1 = pd.DataFrame({"prompt": ["p1", "p2"], "response": ["a1", "a2"], "kind": ["bc", "analyzer"]})
    mixture = fit_mixture(pairs, stage1, repeat=3)
    assert len(mixture) == 3 * len(pairs) + 2
    assert mixture["kind"].value_counts().to_dict() == {"fit_plain": 3 * len(episode.steps), "fit_skill": 3 * len(episode.steps), "bc": 1, "analyzer": 1}
    with pytest.raises(ValueError, match="multi-turn"):
        fit_mixture(pairs, stage1.assign(header=["h", None]), repeat=1)


def test_training_on_the_mixture_fits_the_played_actions_with_the_skill(played, tiny_policy):
    episode, samples = played
    pairs = teacher_fit_pairs([episode], samples, {episode.episode_id: f"do: {episode.steps[0].action}"})
    stage1 = pd.DataFrame({"prompt": [samples[0].prompt], "response": [episode.steps[0].action], "kind": ["bc"]})
    policy = copy.deepcopy(tiny_policy)
    config = SFTConfig(learning_rate=0.003, batch_size=8, max_steps=30, warmup_ratio=0.0, log_every=1, bf16_autocast=False)
    history = train_sft(policy, fit_mixture(pairs, stage1, repeat=2), config)
    assert history["loss"].iloc[-5:].mean() < 0.5 * history["loss"].iloc[:5].mean()


def test_the_fit_is_off_by_default_and_refuses_bad_settings():
    assert Stage1Config().teacher_fit.episodes_per_game == 0
    multiturn = project_settings({"rollout": {"layout": "multiturn"}})
    with pytest.raises(ValueError, match="step-wise only; rollout.layout is multiturn"):  # before any episode is played
        fit_stage1_teacher(None, pd.DataFrame(), multiturn, Stage1Config(teacher_fit=TeacherFitConfig(episodes_per_game=1)))
    with pytest.raises(ValueError, match="episodes_per_game must be >= 0 and repeat >= 1"):
        TeacherFitConfig(repeat=0)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        TeacherFitConfig(sampling={"temperature": 0.0})

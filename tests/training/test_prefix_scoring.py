"""Scoring with a shared prompt prefix read once (``policy.prefix_scoring``) against a fresh
pass per sample: the same response log-probs (fp32, 1e-5), in the samples' order, whatever
the micro-batches; each distinct prefix (task line + skill block) read once, not once per step."""

from __future__ import annotations

import pytest
import torch

from hindsight.envs import make_env
from hindsight.policy.encoding import StepSample, collate
from hindsight.policy.logprobs import token_logprobs
from hindsight.rollout import RolloutConfig, run_rollouts
from hindsight.policy.skill_injection import inject_skill
from hindsight.training.distillation import response_logprobs, skill_augmented_logprobs
from hindsight.policy.prefix_scoring import prefix_shared_logprobs, shared_prefix_lengths
from hindsight.policy.generation import SamplingConfig

SKILLS = ["do: take the object; put it where it belongs", "avoid: look around"]


@pytest.fixture(scope="module")
def rollout(tiny_policy, twc_tasks):
    """3 tasks x 2 episodes of the tiny policy, step-wise layout."""
    config = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), group_size=2, max_parallel=6, max_steps=4, seed=5, progress=False)
    return run_rollouts(tiny_policy, make_env, twc_tasks, config)


@pytest.fixture(scope="module")
def skill_of(rollout):
    """Skills of two lengths (so prefixes differ in length within a micro-batch); one episode has none."""
    episodes = list(dict.fromkeys(rollout.table["episode_id"]))
    return {episode: (SKILLS[k % 2] if k else None) for k, episode in enumerate(episodes)}


def per_sample(model, samples, pad):
    """The reference: each sample scored alone, from its first id."""
    with torch.no_grad():
        return [token_logprobs(model, collate([sample], pad))[0, -len(sample.response_ids) :] for sample in samples]


def test_shared_prefix_lengths():
    def sample(ids):
        return StepSample(prompt_ids=ids, response_ids=[9])

    samples = [sample([1, 2, 3, 4]), sample([1, 2, 3, 5, 6]), sample([1, 2, 7]), sample([1, 2, 3]), sample([1, 2, 3, 4])]
    assert shared_prefix_lengths(samples, ["a", "a", "b", "c", "c"]) == [3, 3, 0, 2, 2]
    # a group of one shares nothing; a prompt that is the others' prefix keeps its last id
    assert shared_prefix_lengths(samples[:2], ["a", "a"]) == [3, 3]
    assert shared_prefix_lengths(samples[3:], ["c", "c"]) == [2, 2]


@pytest.mark.parametrize("budget", [None, 600])
def test_shared_prefix_scoring_equals_a_fresh_pass_per_sample(rollout, skill_of, tiny_policy, budget):
    tokenizer, model = tiny_policy.tokenizer, tiny_policy.model
    augmented = [
        s.with_prompt(tokenizer, inject_skill(s.prompt, skill_of[s.episode_id])) for s in rollout.samples if skill_of[s.episode_id]
    ]
    prefixes = shared_prefix_lengths(augmented, [s.episode_id for s in augmented])
    assert min(prefixes) > 20  # the task line and the skill block
    scored = prefix_shared_logprobs(model, augmented, prefixes, 4, tokenizer.pad_token_id, budget)
    reference = per_sample(model, augmented, tokenizer.pad_token_id)
    assert len(scored) == len(reference)
    for got, want in zip(scored, reference):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    # the comparison can fail: the plain prompt's log-probs differ
    plain = per_sample(model, [s for s in rollout.samples if skill_of[s.episode_id]], tokenizer.pad_token_id)
    assert any(not torch.allclose(got, want, atol=1e-3) for got, want in zip(scored, plain))


def test_length_sorted_scoring_keeps_the_samples_order(rollout, tiny_policy):
    tokenizer, model = tiny_policy.tokenizer, tiny_policy.model
    samples = rollout.samples
    assert len({len(s.input_ids) for s in samples}) > 3  # mixed lengths: sorting reorders them
    for budget in (None, 700):
        scored = response_logprobs(model, samples, 3, tokenizer.pad_token_id, token_budget=budget)
        for got, want in zip(scored, per_sample(model, samples, tokenizer.pad_token_id)):
            torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_each_prefix_is_read_once(rollout, skill_of, tiny_policy):
    tokenizer, model = tiny_policy.tokenizer, tiny_policy.model
    read = []

    def count(module, args, kwargs):
        ids, attention = kwargs["input_ids"], kwargs["attention_mask"]
        read.append(int(attention[:, -ids.shape[1] :].sum()))

    handle = model.register_forward_pre_hook(count, with_kwargs=True)
    try:
        teacher = skill_augmented_logprobs(model, tokenizer, rollout.samples, skill_of, 64)
    finally:
        handle.remove()
    augmented = [
        s.with_prompt(tokenizer, inject_skill(s.prompt, skill_of[s.episode_id])) for s in rollout.samples if skill_of[s.episode_id]
    ]
    prefixes = shared_prefix_lengths(augmented, [s.episode_id for s in augmented])
    # each distinct prefix once (episodes of one task with the same skill share theirs), then every sample's rest
    distinct = {tuple(s.prompt_ids[:length]) for s, length in zip(augmented, prefixes)}
    assert len(distinct) < len({s.episode_id for s in augmented}) < len(augmented)
    assert sum(read) == sum(map(len, distinct)) + sum(len(s.input_ids) - length for s, length in zip(augmented, prefixes))
    assert [logp is None for logp in teacher] == [skill_of[s.episode_id] is None for s in rollout.samples]
    for got, want in zip([logp for logp in teacher if logp is not None], per_sample(model, augmented, tokenizer.pad_token_id)):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-5)

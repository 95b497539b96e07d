"""Batched generation: constrained validity, recorded log-probs, stopping, seeding."""

from __future__ import annotations

import torch

from hindsight.policy.encoding import collate, encode_prompt
from hindsight.policy.generation import SamplingConfig, generate, generate_text
from hindsight.policy.logprobs import token_logprobs


def _recomputed(policy, generations):
    samples = [g.sample for g in generations]
    with torch.no_grad():
        logprobs = token_logprobs(policy.model, collate(samples, policy.tokenizer.pad_token_id))
    return [logprobs[row, -len(sample.response_ids) :] for row, sample in enumerate(samples)]


def test_constrained_generation_only_yields_valid_actions(tiny_policy, gold_steps):
    steps = gold_steps[:24]
    config = SamplingConfig(temperature=1.5)  # explore: many different actions
    seen = set()
    for seed in range(3):
        generations = generate(
            tiny_policy,
            [s["prompt"] for s in steps],
            config=config,
            valid_actions=[s["valid_actions"] for s in steps],
            generator=torch.Generator().manual_seed(seed),
        )
        for step, generation in zip(steps, generations):
            assert generation.text in step["valid_actions"]
            assert generation.finished
            ids = tiny_policy.tokenizer(generation.text, add_special_tokens=False)["input_ids"]
            assert generation.sample.response_ids == ids + [tiny_policy.tokenizer.eos_token_id]
            assert len(generation.sample.allowed_ids) == len(generation.sample.response_ids)
            assert all(token in allowed for token, allowed in zip(generation.sample.response_ids, generation.sample.allowed_ids))
            seen.add(generation.text)
    assert len(seen) > 5


def test_recorded_logprobs_match_the_restricted_recomputation(tiny_policy, gold_steps):
    steps = gold_steps[:16]
    generations = generate(
        tiny_policy,
        [s["prompt"] for s in steps],
        config=SamplingConfig(temperature=0.4),
        valid_actions=[s["valid_actions"] for s in steps],
        generator=torch.Generator().manual_seed(1),
    )
    for generation, recomputed in zip(generations, _recomputed(tiny_policy, generations)):
        assert torch.allclose(generation.sample.old_logprobs, recomputed, atol=1e-5)
        assert all(value <= 1e-6 for value in generation.sample.old_logprobs.tolist())
        # a position with a single allowed token has log-prob 0 (restricted), not log p(token)
        for value, allowed in zip(generation.sample.old_logprobs.tolist(), generation.sample.allowed_ids):
            if len(allowed) == 1:
                assert abs(value) < 1e-6


def test_free_generation_stops_and_its_logprobs_match(tiny_policy, gold_steps):
    prompts = [s["prompt"] for s in gold_steps[:6]]
    config = SamplingConfig(constrained=False, temperature=1.0, max_new_tokens=7)
    generations = generate(tiny_policy, prompts, config=config, generator=torch.Generator().manual_seed(0))
    eos = tiny_policy.tokenizer.eos_token_id
    for generation in generations:
        assert 1 <= len(generation.sample.response_ids) <= 7
        assert generation.sample.allowed_ids is None
        assert "\n" not in generation.text
        last = tiny_policy.tokenizer.decode([generation.sample.response_ids[-1]])
        assert generation.finished == (generation.sample.response_ids[-1] == eos or "\n" in last)
        assert generation.finished or len(generation.sample.response_ids) == 7
    for generation, recomputed in zip(generations, _recomputed(tiny_policy, generations)):
        assert torch.allclose(generation.sample.old_logprobs, recomputed, atol=1e-5)


def test_seeded_and_batch_independent(tiny_policy, gold_steps):
    steps = gold_steps[:8]
    prompts, valid = [s["prompt"] for s in steps], [s["valid_actions"] for s in steps]
    config = SamplingConfig(temperature=1.0)
    first = generate(tiny_policy, prompts, config=config, valid_actions=valid, generator=torch.Generator().manual_seed(5))
    again = generate(tiny_policy, prompts, config=config, valid_actions=valid, generator=torch.Generator().manual_seed(5))
    assert [g.sample.response_ids for g in first] == [g.sample.response_ids for g in again]
    # greedy: one big batch, identical prompts (deduplicated prefill) and one by one agree
    greedy = SamplingConfig(temperature=0.0, max_batch_tokens=10**6)
    batched = generate(tiny_policy, prompts + prompts[:2], config=greedy, valid_actions=valid + valid[:2])
    for index, (prompt, actions) in enumerate(zip(prompts, valid)):
        alone = generate(tiny_policy, [prompt], config=greedy, valid_actions=[actions])[0]
        assert batched[index].sample.response_ids == alone.sample.response_ids
        assert torch.allclose(batched[index].sample.old_logprobs, alone.sample.old_logprobs, atol=1e-5)
    assert batched[-1].sample.response_ids == batched[1].sample.response_ids


def test_long_prompts_keep_their_newest_tokens(tiny_policy, gold_steps):
    step = max(gold_steps, key=lambda s: len(s["prompt"]))
    full = encode_prompt(tiny_policy.tokenizer, step["prompt"])
    config = SamplingConfig(temperature=0.0, max_length=64)
    generation = generate(tiny_policy, [step["prompt"]], config=config, valid_actions=[step["valid_actions"]])[0]
    budget = max(len(tiny_policy.tokenizer(a)["input_ids"]) + 1 for a in step["valid_actions"])
    assert generation.sample.prompt_ids == full[-(64 - budget) :]
    assert generation.sample.truncated_tokens == len(full) - (64 - budget)
    assert generation.text in step["valid_actions"]
    assert generation.sample.prompt == step["prompt"] and generation.sample.max_length == 64


def test_generate_text_is_greedy_free_text(tiny_policy, gold_steps):
    prompts = [s["prompt"] for s in gold_steps[:3]]
    texts = generate_text(tiny_policy, prompts, max_new_tokens=12)
    assert len(texts) == 3 and all(isinstance(text, str) for text in texts)
    assert texts == generate_text(tiny_policy, prompts, max_new_tokens=12)


def test_stop_strings_end_free_generation_and_cut_the_text(tiny_policy, gold_steps):
    """With a stop string, a row ends at the first token containing it (and at no earlier
    token), and its text is cut before the string."""
    prompts = [s["prompt"] for s in gold_steps[:8]]
    config = SamplingConfig(constrained=False, temperature=1.0, max_new_tokens=40, stop_at_newline=False, stop_strings=("e",))
    generations = generate(tiny_policy, prompts, config=config, generator=torch.Generator().manual_seed(1))
    tokenizer = tiny_policy.tokenizer
    ended_by_stop = 0
    for generation in generations:
        pieces = [tokenizer.decode([token]) for token in generation.sample.response_ids]
        assert not any("e" in piece for piece in pieces[:-1])
        assert "e" not in generation.text
        if "e" in pieces[-1]:
            ended_by_stop += 1
            assert generation.finished
            assert generation.text == tokenizer.decode(generation.sample.response_ids, skip_special_tokens=True).split("e", 1)[0].strip()
    assert ended_by_stop > 0  # "e" is in many tokens: an untrained model samples one within 40

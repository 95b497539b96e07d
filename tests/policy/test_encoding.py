"""Prompt/response encoding: the response mask, left padding, truncation, EOS."""

from __future__ import annotations

import pytest

from hindsight.policy.encoding import collate, encode_ids, encode_prompt, encode_response, encode_sample
from hindsight.policy.prompts import PromptConfig, build_prompt

pytestmark = pytest.mark.unit


def test_mask_covers_exactly_the_response_and_eos(tokenizer, gold_steps):
    samples = [encode_sample(tokenizer, step["prompt"], step["action"]) for step in gold_steps[:5]]
    batch = collate(samples, tokenizer.pad_token_id)
    for row, step in enumerate(gold_steps[:5]):
        masked = batch.input_ids[row][batch.response_mask[row].bool()].tolist()
        assert masked == tokenizer(step["action"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        assert tokenizer.decode(masked[:-1]) == step["action"]
        assert batch.input_ids[row, -1].item() == tokenizer.eos_token_id
        # the prompt part is the prompt tokenized alone
        prompt_part = batch.input_ids[row][batch.attention_mask[row].bool() & ~batch.response_mask[row].bool()]
        assert prompt_part.tolist() == tokenizer(step["prompt"], add_special_tokens=False)["input_ids"]


def test_left_padding(tokenizer, gold_steps):
    short, long = gold_steps[0], max(gold_steps, key=lambda step: len(step["prompt"]))
    batch = collate([encode_sample(tokenizer, s["prompt"], s["action"]) for s in (short, long)], tokenizer.pad_token_id)
    lengths = batch.attention_mask.sum(dim=1)
    assert lengths[0] < lengths[1] == batch.input_ids.shape[1]
    padding = batch.input_ids.shape[1] - lengths[0]
    assert batch.attention_mask[0, :padding].sum() == 0 and batch.attention_mask[0, padding:].all()
    assert (batch.input_ids[0, :padding] == tokenizer.pad_token_id).all()
    assert batch.response_mask[0, :padding].sum() == 0
    assert batch.position_ids[0, padding].item() == 0 and batch.position_ids[0, -1].item() == lengths[0] - 1


def test_truncation_drops_the_oldest_prompt_tokens(tokenizer, gold_steps):
    long_history = [(step["prompt"].split("Current observation: ")[1][:200], step["action"]) for step in gold_steps[:8]]
    config = PromptConfig(history_window=8)
    prompt = build_prompt("put things away", long_history, "You are in the kitchen.", ["look around"], config=config)
    full = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    sample = encode_sample(tokenizer, prompt, "look around", max_length=64)
    response = encode_response(tokenizer, "look around")
    assert len(sample.input_ids) == 64
    assert sample.response_ids == response
    assert sample.prompt_ids == full[-(64 - len(response)) :]
    assert sample.truncated_tokens == len(full) - (64 - len(response))
    batch = collate([sample], tokenizer.pad_token_id)
    assert batch.response_mask.sum().item() == len(response)


def test_with_prompt_keeps_the_response_restriction_and_identity(tokenizer, gold_steps):
    import dataclasses

    import torch

    eos = tokenizer.eos_token_id
    step = gold_steps[3]
    sample = dataclasses.replace(
        encode_ids(encode_prompt(tokenizer, step["prompt"]), [8, 9, eos], 48, allowed_ids=[[8, 10], [9], [eos]]),
        episode_id="e", group_id="g", step=3, prompt=step["prompt"], old_logprobs=torch.tensor([-0.5, 0.0, 0.0]),
    )
    longer = "Skill: take everything first.\n" + step["prompt"]
    other = sample.with_prompt(tokenizer, longer)
    assert (other.episode_id, other.group_id, other.step, other.prompt) == ("e", "g", 3, longer)
    assert other.response_ids == sample.response_ids and other.allowed_ids == sample.allowed_ids
    assert other.old_logprobs is sample.old_logprobs and other.max_length == 48
    assert other.prompt_ids == encode_prompt(tokenizer, longer)[-(48 - 3) :]
    assert other.truncated_tokens == len(encode_prompt(tokenizer, longer)) - (48 - 3)
    assert len(collate([sample, other], tokenizer.pad_token_id).input_ids[0]) == 48


def test_allowed_ids_are_placed_on_response_positions(tokenizer):
    eos = tokenizer.eos_token_id
    sample = encode_ids([5, 6, 7], [8, 9, eos], max_length=16, allowed_ids=[[8, 10], [9], [eos]])
    other = encode_ids([5, 6, 7, 8, 9], [4, eos], max_length=16)
    batch = collate([sample, other], tokenizer.pad_token_id)
    assert batch.response_width == 3
    assert batch.allowed_ids.shape == (2, 7, 2)
    assert batch.allowed_ids[0, -3].tolist() == [8, 10]
    assert batch.allowed_ids[0, -2].tolist() == [9, -1]
    assert (batch.allowed_ids[0, :-3] == -1).all()
    assert (batch.allowed_ids[1] == -1).all()  # no allowed ids: unrestricted


def test_bad_inputs_raise_clear_errors(tokenizer):
    with pytest.raises(ValueError, match="max_length=4"):
        encode_ids([1, 2], [3, 4, 5, 6], max_length=4)
    with pytest.raises(ValueError, match="allowed_ids has 1 entries for 2"):
        encode_ids([1, 2], [3, 4], max_length=8, allowed_ids=[[3]])
    with pytest.raises(ValueError, match="prompt is empty"):
        encode_ids([], [3, 4], max_length=8)
    with pytest.raises(ValueError, match="no samples"):
        collate([], 0)


def test_padding_to_a_multiple_adds_only_left_padding(tokenizer, tiny_policy, gold_steps):
    import torch

    from hindsight.policy.logprobs import token_logprobs

    samples = [encode_sample(tokenizer, s["prompt"], s["action"]) for s in gold_steps[:3]]
    plain = collate(samples, tokenizer.pad_token_id)
    rounded = collate(samples, tokenizer.pad_token_id, pad_to_multiple_of=64)
    length = plain.input_ids.shape[1]
    assert rounded.input_ids.shape[1] % 64 == 0 and length <= rounded.input_ids.shape[1] < length + 64
    extra = rounded.input_ids.shape[1] - length
    assert torch.equal(rounded.input_ids[:, extra:], plain.input_ids)
    assert rounded.attention_mask[:, :extra].sum() == 0 and torch.equal(rounded.response_mask[:, extra:], plain.response_mask)
    with torch.no_grad():
        torch.testing.assert_close(
            token_logprobs(tiny_policy.model, rounded)[:, extra:], token_logprobs(tiny_policy.model, plain), rtol=0, atol=1e-4
        )


def test_token_budget_chunks_keep_order_and_budget():
    from hindsight.policy.batching import token_budget_chunks

    lengths = [10, 10, 30, 30, 30, 100, 5]
    chunks = token_budget_chunks(range(7), lengths, 90)
    assert [i for chunk in chunks for i in chunk] == list(range(7))
    assert all(len(chunk) * max(lengths[i] for i in chunk) <= 90 or len(chunk) == 1 for chunk in chunks)
    assert chunks == [[0, 1, 2], [3, 4], [5], [6]]
    assert token_budget_chunks(range(7), lengths, None) == [list(range(7))]
    assert token_budget_chunks([], lengths, 90) == []


def test_forced_positions_are_left_out_of_the_choice_mask(tokenizer, gold_steps):
    """A response position where the decoder allowed one id is forced: it is a response
    token but not a choice (every log-prob 0, gate 0.5)."""
    response = encode_response(tokenizer, gold_steps[0]["action"])
    allowed = [[token, token + 1] if index == 0 else [token] for index, token in enumerate(response)]
    sample = encode_ids(encode_prompt(tokenizer, gold_steps[0]["prompt"]), response, None, allowed)
    assert sample.choice_positions == [True] + [False] * (len(response) - 1)
    batch = collate([sample], tokenizer.pad_token_id)
    width = batch.response_width
    assert batch.response_mask[0, -width:].tolist() == [1] * width
    assert batch.choice_mask[0, -width:].tolist() == [1] + [0] * (width - 1)
    free = encode_ids(encode_prompt(tokenizer, gold_steps[0]["prompt"]), response, None, None)
    assert free.choice_positions == [True] * len(response)


def test_length_sorted_chunks_sort_then_keep_budget_and_rows():
    from hindsight.policy.batching import length_sorted_chunks

    lengths = [30, 10, 100, 10, 30, 5, 30]
    assert length_sorted_chunks(lengths, 90) == [[5, 1, 3], [0, 4, 6], [2]]  # stable among equal lengths
    assert length_sorted_chunks(lengths, 90, max_rows=2) == [[5, 1], [3], [0, 4], [6], [2]]
    assert length_sorted_chunks(lengths, None) == [[5, 1, 3, 0, 4, 6, 2]]
    assert length_sorted_chunks([], 90) == []

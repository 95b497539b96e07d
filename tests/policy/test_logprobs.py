"""token_logprobs: restriction, masking, gradients."""

from __future__ import annotations

import torch

from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import collate, encode_sample
from hindsight.policy.logprobs import token_logprobs


def _samples(tokenizer, steps, restricted=True):
    samples = []
    for step in steps:
        trie = ActionTrie.from_actions(tokenizer, step["valid_actions"])
        ids = tokenizer(step["action"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        allowed = trie.allowed_along(ids) if restricted else None
        samples.append(encode_sample(tokenizer, step["prompt"], step["action"], allowed_ids=allowed))
    return samples


def test_restricted_logprobs_are_a_distribution_over_valid_actions(tiny_policy, gold_steps):
    tokenizer = tiny_policy.tokenizer
    step = gold_steps[4]
    steps = [{**step, "action": action} for action in sorted(set(step["valid_actions"]))]
    with torch.no_grad():
        logprobs = token_logprobs(tiny_policy.model, collate(_samples(tokenizer, steps), tokenizer.pad_token_id))
    action_logprobs = logprobs.sum(dim=1)  # log pi(action) under the restriction
    assert abs(torch.logsumexp(action_logprobs, dim=0).item()) < 1e-5  # the actions' probabilities sum to 1


def test_zero_outside_the_response_and_unrestricted_is_plain_log_softmax(tiny_policy, gold_steps):
    tokenizer = tiny_policy.tokenizer
    batch = collate(_samples(tokenizer, gold_steps[:4], restricted=False), tokenizer.pad_token_id)
    with torch.no_grad():
        logprobs = token_logprobs(tiny_policy.model, batch)
        output = tiny_policy.model(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=batch.position_ids
        )
        full = torch.log_softmax(output.logits, dim=-1)
    expected = torch.gather(full[:, :-1], -1, batch.input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = batch.response_mask[:, 1:].bool()
    assert torch.allclose(logprobs[:, 1:][mask], expected[mask], atol=1e-5)
    assert (logprobs[~batch.response_mask.bool()] == 0).all()
    assert (logprobs[batch.response_mask.bool()] < 0).all()


def test_restricted_is_at_least_the_unrestricted_logprob(tiny_policy, gold_steps):
    tokenizer = tiny_policy.tokenizer
    with torch.no_grad():
        restricted_batch = collate(_samples(tokenizer, gold_steps[:4]), tokenizer.pad_token_id)
        plain_batch = collate(_samples(tokenizer, gold_steps[:4], restricted=False), tokenizer.pad_token_id)
        restricted = token_logprobs(tiny_policy.model, restricted_batch)
        plain = token_logprobs(tiny_policy.model, plain_batch)
    assert (restricted >= plain - 1e-6).all() and (restricted > plain + 1e-3).any()


def test_differentiable_with_mixed_restricted_and_free_rows(tiny_policy, gold_steps):
    tokenizer = tiny_policy.tokenizer
    samples = _samples(tokenizer, gold_steps[:3]) + _samples(tokenizer, gold_steps[3:5], restricted=False)
    batch = collate(samples, tokenizer.pad_token_id)
    tiny_policy.model.zero_grad()
    logprobs = token_logprobs(tiny_policy.model, batch)
    logprobs.sum().backward()
    grads = [p.grad for p in tiny_policy.model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)
    tiny_policy.model.zero_grad()
    # the free rows equal their values in an all-free batch
    with torch.no_grad():
        free_only = token_logprobs(tiny_policy.model, collate(samples[3:], tokenizer.pad_token_id))
    width = free_only.shape[1]
    assert torch.allclose(logprobs.detach()[3:, -width:], free_only, atol=1e-5)

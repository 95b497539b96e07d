"""The embedded gpt-oss policy: built on the sink-aware attention, it trains and round-trips."""

from __future__ import annotations

import pytest
import torch

from hindsight.config import PolicyConfig
from hindsight.policy.model import build_policy, load_policy, save_policy
from hindsight.policy.sink_attention import SINK_FLEX_ATTENTION


@pytest.fixture(scope="module")
def gpt_oss_policy(tokenizer):
    return build_policy("tiny", tokenizer, seed=0, device="cpu", architecture="gpt_oss")


def _batch(tokenizer):
    texts = ["go north then take the apple", "open the fridge and put the milk inside"]
    encoded = tokenizer(texts, return_tensors="pt", padding=True)
    labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
    return encoded["input_ids"], encoded["attention_mask"], labels


def test_builds_a_gpt_oss_model_on_the_sink_aware_attention(gpt_oss_policy):
    model = gpt_oss_policy.model
    assert model.config.model_type == "gpt_oss"
    assert model.config._attn_implementation == SINK_FLEX_ATTENTION
    assert {"sliding_attention", "full_attention"} == set(model.config.layer_types)
    assert all(layer.self_attn.sinks.requires_grad for layer in model.model.layers)


def test_a_few_sft_steps_lower_the_loss(tokenizer):
    policy = build_policy("tiny", tokenizer, seed=0, device="cpu", architecture="gpt_oss")
    model = policy.model.train()
    ids, mask, labels = _batch(tokenizer)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sinks_before = model.model.layers[0].self_attn.sinks.detach().clone()
    losses = []
    for _ in range(6):
        optimiser.zero_grad()
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]
    assert not torch.equal(model.model.layers[0].self_attn.sinks, sinks_before)  # the sinks learn


def test_saved_and_loaded_policy_keeps_the_attention_and_the_logits(gpt_oss_policy, tmp_path):
    ids, mask, _ = _batch(gpt_oss_policy.tokenizer)
    save_policy(gpt_oss_policy, tmp_path / "policy")
    loaded = load_policy(tmp_path / "policy", device="cpu")
    assert loaded.model.config._attn_implementation == SINK_FLEX_ATTENTION
    with torch.no_grad():
        want = gpt_oss_policy.model(input_ids=ids, attention_mask=mask).logits
        got = loaded.model(input_ids=ids, attention_mask=mask).logits
    torch.testing.assert_close(got[mask.bool()], want[mask.bool()])


def test_an_unknown_architecture_names_the_setting(tokenizer):
    with pytest.raises(ValueError, match="policy.architecture"):
        build_policy("tiny", tokenizer, architecture="mamba")
    with pytest.raises(ValueError, match="policy.architecture"):
        PolicyConfig(architecture="mamba")

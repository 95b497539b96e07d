"""``train_sft`` on a real tiny model: the loss falls and every trainable parameter moves;
with LoRA only the adapter moves, and the adapter saves and reloads to the same logits."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import torch

from hindsight.policy.encoding import collate, encode_sample
from hindsight.policy.model import load_policy, save_policy
from hindsight.training.sft import SFTConfig, train_sft

LORA = {"rank": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}


def test_loss_falls_over_thirty_steps(behaviour_cloning):
    history = behaviour_cloning.history
    assert history["step"].tolist() == list(range(1, 31))
    first, last = history["loss"].head(5).mean(), history["loss"].tail(5).mean()
    assert last < 0.6 * first, (first, last)


def test_every_trainable_parameter_changed(behaviour_cloning):
    before = behaviour_cloning.weights_before
    after = dict(behaviour_cloning.policy.model.named_parameters())
    assert before, "no trainable parameter"
    unchanged = [name for name, weights in before.items() if torch.equal(weights, after[name].detach())]
    assert not unchanged, f"parameters SFT never moved (weight decay is off, so no gradient reached them): {unchanged}"


def logits(policy, gold_examples) -> torch.Tensor:
    encoded = [encode_sample(policy.tokenizer, e["prompt"], e["response"], max_length=768) for e in gold_examples[:3]]
    batch = collate(encoded, pad_token_id=policy.tokenizer.pad_token_id)
    with torch.no_grad():
        return policy.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits


@pytest.fixture(scope="module")
def lora_run(tiny_policy, gold_examples, tmp_path_factory):
    """A LoRA adapter on a saved tiny model, trained for a few steps, then saved."""
    base_dir = tmp_path_factory.mktemp("base_model")
    save_policy(copy.deepcopy(tiny_policy), base_dir)
    policy = load_policy(base_dir, lora=LORA, device="cpu")
    before = {name: p.detach().clone() for name, p in policy.model.named_parameters()}
    config = SFTConfig(learning_rate=1e-2, weight_decay=0.0, batch_size=8, max_steps=4, max_length=768, log_every=1)
    history = train_sft(policy, pd.DataFrame(gold_examples), config)
    adapter_dir = tmp_path_factory.mktemp("adapter")
    save_policy(policy, adapter_dir)
    return {"policy": policy, "before": before, "history": history, "adapter_dir": adapter_dir, "base_dir": base_dir}


def test_lora_trains_only_the_adapter(lora_run):
    policy, before = lora_run["policy"], lora_run["before"]
    assert policy.is_lora
    trainable = {name for name, p in policy.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)
    for name, parameter in policy.model.named_parameters():
        moved = not torch.equal(before[name], parameter.detach())
        assert moved == (name in trainable), f"{name}: moved={moved}, trainable={name in trainable}"
    assert len(lora_run["history"]) == 4


def test_lora_adapter_saves_and_reloads(lora_run, tiny_policy, gold_examples):
    adapter_dir = lora_run["adapter_dir"]
    assert (adapter_dir / "adapter_config.json").is_file()
    assert not (adapter_dir / "config.json").exists()  # the adapter alone, not a full model
    reloaded = load_policy(adapter_dir, device="cpu")
    assert reloaded.is_lora
    expected = logits(lora_run["policy"], gold_examples)
    torch.testing.assert_close(logits(reloaded, gold_examples), expected, rtol=0, atol=1e-5)
    assert not torch.allclose(logits(tiny_policy, gold_examples), expected, atol=1e-4)  # the adapter matters


def test_micro_batches_train_the_same_weights_as_whole_batches(tiny_policy, gold_examples):
    """Two steps with every batch split into one-example pieces (budget 1 token) give the
    weights of two steps over whole batches: the split bounds memory, not the loss."""
    config = SFTConfig(learning_rate=1e-2, weight_decay=0.0, batch_size=8, max_steps=2, max_length=768, log_every=1)
    weights = []
    for budget in (None, 1):
        policy = copy.deepcopy(tiny_policy)
        history = train_sft(policy, pd.DataFrame(gold_examples), SFTConfig(**{**config.__dict__, "micro_batch_tokens": budget}))
        weights.append((torch.cat([p.detach().flatten() for p in policy.model.parameters()]), history))
    (whole, whole_history), (pieces, pieces_history) = weights
    initial = torch.cat([p.detach().flatten() for p in tiny_policy.model.parameters()])
    assert not torch.equal(whole, initial)
    # AdamW's first steps move each weight by about +-lr whatever the gradient's size, so
    # float-rounding differences of near-zero gradients can show; a wrong weighting of the
    # pieces flips whole steps (2 x lr).
    torch.testing.assert_close(pieces, whole, rtol=0, atol=0.1 * config.learning_rate)
    assert pieces_history["loss"].tolist() == pytest.approx(whole_history["loss"].tolist(), rel=1e-4)


def test_bf16_autocast_trains_and_keeps_float32_weights(tiny_policy, gold_examples):
    policy = copy.deepcopy(tiny_policy)
    # batch 4: bf16 autocast on a CPU without native bf16 emulates every matmul (~4x float32)
    config = SFTConfig(learning_rate=1e-2, weight_decay=0.0, batch_size=4, max_steps=12, max_length=768, log_every=1,
                       bf16_autocast=True)
    history = train_sft(policy, pd.DataFrame(gold_examples), config)
    assert history["loss"].tail(3).mean() < 0.8 * history["loss"].head(3).mean()
    assert all(p.dtype == torch.float32 for p in policy.model.parameters())


def test_bf16_autocast_setting_is_checked():
    assert SFTConfig(bf16_autocast="auto").bf16_autocast == "auto"
    with pytest.raises(ValueError, match="bf16_autocast"):
        SFTConfig(bf16_autocast="sometimes")

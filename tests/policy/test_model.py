"""Building, saving, loading (with and without LoRA) the policy."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoTokenizer

from hindsight.policy.model import (
    MODEL_PRESETS,
    LoraSettings,
    build_policy,
    count_parameters,
    load_policy,
    save_policy,
)


def _logits(policy, ids):
    with torch.no_grad():
        return policy.model(input_ids=torch.tensor([ids])).logits


@pytest.mark.parametrize(("preset", "low", "high"), [("tiny", 0.7e6, 1.5e6), ("small", 3e6, 5e6), ("base", 25e6, 35e6)])
def test_preset_sizes_at_a_2048_token_vocabulary(tokenizer, preset, low, high):
    policy = build_policy(preset, tokenizer, seed=0, device="cpu")
    hidden = MODEL_PRESETS[preset]["hidden_size"]
    at_2048 = count_parameters(policy.model) + (2048 - len(tokenizer)) * hidden
    assert low <= at_2048 <= high
    model = policy.model
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # tied
    assert model.config.vocab_size == len(tokenizer)


def test_build_is_seeded(tokenizer):
    first, again, other = (build_policy("tiny", tokenizer, seed=s, device="cpu") for s in (3, 3, 4))
    weight = "model.layers.0.mlp.up_proj.weight"
    state = [p.model.state_dict()[weight] for p in (first, again, other)]
    assert torch.equal(state[0], state[1]) and not torch.equal(state[0], state[2])
    with pytest.raises(ValueError, match="Unknown model preset 'huge'"):
        build_policy("huge", tokenizer)


def test_saved_directory_reloads_with_identical_logits(tiny_policy, tmp_path, gold_steps):
    tiny_policy.version = 7
    try:
        save_policy(tiny_policy, tmp_path / "policy")
    finally:
        tiny_policy.version = 0
    loaded = load_policy(tmp_path / "policy", device="cpu")
    ids = tiny_policy.tokenizer(gold_steps[2]["prompt"], add_special_tokens=False)["input_ids"]
    assert torch.equal(_logits(tiny_policy, ids), _logits(loaded, ids))
    assert loaded.version == 7
    assert loaded.tokenizer.padding_side == "left"
    assert loaded.tokenizer(gold_steps[2]["prompt"], add_special_tokens=False)["input_ids"] == ids
    # a plain AutoTokenizer (which rebuilds a Qwen2Tokenizer here) tokenizes the same way
    auto = AutoTokenizer.from_pretrained(tmp_path / "policy", local_files_only=True)
    for step in gold_steps:
        text = step["prompt"] + step["action"]
        expected = tiny_policy.tokenizer(text, add_special_tokens=False)["input_ids"]
        assert auto(text, add_special_tokens=False)["input_ids"] == expected
    # the (model, tokenizer, directory) form
    save_policy(tiny_policy.model, tiny_policy.tokenizer, tmp_path / "again")
    assert torch.equal(_logits(load_policy(tmp_path / "again", device="cpu"), ids), _logits(tiny_policy, ids))


def test_missing_or_unreadable_directory_gives_a_clear_error(tmp_path):
    missing = tmp_path / "no_such_model"
    with pytest.raises(FileNotFoundError, match="no_such_model"):
        load_policy(missing)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty.*no config.json"):
        load_policy(tmp_path / "empty")


def test_lora_adapter_trains_saves_and_reloads(tiny_policy, tmp_path, gold_steps):
    save_policy(tiny_policy, tmp_path / "base")
    settings = LoraSettings(rank=4, alpha=8, dropout=0.0, target_modules=["q_proj", "v_proj"])
    policy = load_policy(tmp_path / "base", lora=settings, device="cpu")
    trainable = [name for name, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name for name in trainable)
    assert count_parameters(policy.model, trainable_only=True) < count_parameters(policy.model) / 10
    with torch.no_grad():  # move the adapter away from its zero init so that saving matters
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.add_(0.05)
    ids = policy.tokenizer(gold_steps[0]["prompt"], add_special_tokens=False)["input_ids"]
    adapted = _logits(policy, ids)
    assert not torch.allclose(adapted, _logits(tiny_policy, ids))

    save_policy(policy, tmp_path / "adapter")
    saved = {path.name for path in (tmp_path / "adapter").iterdir()}
    assert "adapter_config.json" in saved and "model.safetensors" not in saved
    assert json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())["r"] == 4

    reloaded = load_policy(tmp_path / "adapter", device="cpu")
    assert reloaded.is_lora
    assert torch.allclose(_logits(reloaded, ids), adapted, atol=1e-6)
    assert all("lora_" in n for n, p in reloaded.model.named_parameters() if p.requires_grad)
    on_base = load_policy(tmp_path / "base", adapter_dir=tmp_path / "adapter", device="cpu")
    assert torch.allclose(_logits(on_base, ids), adapted, atol=1e-6)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_policy(tmp_path / "base", adapter_dir=tmp_path / "nowhere")


def test_lora_on_the_last_layers_adapts_only_those_and_backpropagates_no_further(tiny_policy, tmp_path, gold_steps):
    save_policy(tiny_policy, tmp_path / "base")
    depth = tiny_policy.model.config.num_hidden_layers
    assert depth >= 2
    settings = LoraSettings(rank=4, alpha=8, dropout=0.0, target_modules=["q_proj", "v_proj"], last_layers=1)
    policy = load_policy(tmp_path / "base", lora=settings, device="cpu")
    adapted_layers = {
        int(name.split(".layers.")[1].split(".")[0]) for name, p in policy.model.named_parameters() if p.requires_grad
    }
    assert adapted_layers == {depth - 1}
    ids = torch.tensor([policy.tokenizer(gold_steps[0]["prompt"], add_special_tokens=False)["input_ids"]])
    reached = []
    first_block = policy.model.get_base_model().model.layers[0]
    first_block.register_full_backward_hook(lambda *args: reached.append(True))
    policy.model(input_ids=ids).logits.sum().backward()
    assert not reached  # no gradient flows below the adapted block
    with pytest.raises(ValueError, match="last_layers"):
        LoraSettings(last_layers=0)

"""The weights rollouts decode with (``policy.inference``): a merged LoRA adapter gives the
unmerged adapter's log-probs, the trainer's weights come back unchanged, a bf16 copy leaves
the fp32 weights alone, and ``auto`` falls back to fp32 where bf16 is not native."""

from __future__ import annotations

import copy

import pytest
import torch

from hindsight.policy import inference
from hindsight.policy.encoding import collate, encode_sample
from hindsight.policy.inference import inference_policy, resolve_inference_dtype
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.lora import LoraSettings
from hindsight.policy.model import load_policy, save_policy


@pytest.fixture(scope="module")
def lora_policy(tiny_policy, tmp_path_factory):
    """The tiny policy with a LoRA adapter whose B matrices are random (a fresh adapter is
    zero, and merging zero proves nothing)."""
    directory = save_policy(copy.deepcopy(tiny_policy), tmp_path_factory.mktemp("base") / "policy")
    policy = load_policy(directory, lora=LoraSettings(rank=4, dropout=0.0), device="cpu")
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(0.05 * torch.randn(parameter.shape, generator=generator))
    policy.model.eval()
    return policy


@pytest.fixture(scope="module")
def batch(gold_steps, tokenizer):
    samples = [encode_sample(tokenizer, step["prompt"], step["action"], max_length=512) for step in gold_steps[:6]]
    return collate(samples, tokenizer.pad_token_id)


def logprobs(model, batch) -> torch.Tensor:
    with torch.no_grad():
        return token_logprobs(model, batch)


def test_merged_lora_gives_the_unmerged_logprobs_and_unmerges(lora_policy, batch):
    unmerged = logprobs(lora_policy.model, batch)
    with lora_policy.model.disable_adapter():
        base = logprobs(lora_policy.model, batch)
    assert (unmerged - base).abs().max() > 1e-3  # the adapter matters, so the comparison can fail
    before = {name: p.detach().clone() for name, p in lora_policy.model.named_parameters()}
    with inference_policy(lora_policy, merge_lora=True, dtype="float32") as actor:
        assert actor.model.base_model.model.model.layers[0].self_attn.q_proj.merged
        merged = logprobs(actor.model, batch)
    torch.testing.assert_close(merged, unmerged, rtol=0, atol=1e-5)
    for name, parameter in lora_policy.model.named_parameters():  # unmerged again, up to rounding
        torch.testing.assert_close(parameter, before[name], rtol=0, atol=1e-6)
    assert not lora_policy.model.base_model.model.model.layers[0].self_attn.q_proj.merged
    torch.testing.assert_close(logprobs(lora_policy.model, batch), unmerged, rtol=0, atol=1e-5)


def test_bf16_copy_is_merged_and_leaves_the_trainer_weights(lora_policy, batch):
    before = {name: p.detach().clone() for name, p in lora_policy.model.named_parameters()}
    unmerged = logprobs(lora_policy.model, batch)
    with inference_policy(lora_policy, merge_lora=True, dtype="bfloat16") as actor:
        assert actor.model is not lora_policy.model and not hasattr(actor.model, "peft_config")
        assert {p.dtype for p in actor.model.parameters()} == {torch.bfloat16}
        assert actor.tokenizer is lora_policy.tokenizer and actor.version == lora_policy.version
        rounded = logprobs(actor.model, batch)
    for name, parameter in lora_policy.model.named_parameters():
        assert parameter.dtype == torch.float32
        assert torch.equal(parameter, before[name]), name
    mask = batch.response_mask.bool()
    gap = (rounded - unmerged)[mask].abs()
    assert 0 < float(gap.max()) < 0.1  # bf16 rounding: not zero, and small


def test_auto_falls_back_to_float32_without_native_bf16(lora_policy, monkeypatch):
    cpu = torch.device("cpu")
    assert resolve_inference_dtype("auto", cpu, native_bf16=False) == torch.float32
    assert resolve_inference_dtype("auto", cpu, native_bf16=True) == torch.bfloat16
    assert resolve_inference_dtype("float32", cpu, native_bf16=True) == torch.float32
    monkeypatch.setattr(inference, "has_native_bf16", lambda device: False)
    with inference_policy(lora_policy, merge_lora=False, dtype="auto") as actor:
        assert actor is lora_policy and next(actor.model.parameters()).dtype == torch.float32
    monkeypatch.setattr(inference, "has_native_bf16", lambda device: True)
    with inference_policy(lora_policy, merge_lora=False, dtype="auto") as actor:
        assert next(actor.model.parameters()).dtype == torch.bfloat16 and hasattr(actor.model, "peft_config")
    with pytest.raises(ValueError, match="must be one of"):
        resolve_inference_dtype("fp16", cpu)

"""Sink-aware FlexAttention: known answers against a dense reference and against gpt-oss's eager attention."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import AutoModelForCausalLM, GptOssConfig
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from hindsight.policy import sink_attention as sa
from hindsight.policy.sink_mask import SinkMaskSpec

WINDOW = 4


def _reference(q, k, v, sinks, q_offset, padding, window, scale):
    """Dense softmax attention with the sink as one more value-less logit column (plain autograd)."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    logits = torch.matmul(q, k.transpose(-1, -2)) * scale
    q_pos = torch.arange(q.shape[2], device=q.device)[:, None] + q_offset
    kv_pos = torch.arange(k.shape[2], device=q.device)[None, :]
    seen = (kv_pos <= q_pos) & ((q_pos - kv_pos < window) if window else True)
    seen = seen[None, None] & padding[:, None, None, :]
    logits = logits.masked_fill(~seen, float("-inf"))
    sink_col = sinks.view(1, -1, 1, 1).expand(*logits.shape[:3], 1)
    probs = torch.softmax(torch.cat([logits, sink_col], -1), -1)[..., :-1]
    return torch.matmul(probs, v)


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("chunk", [2, 256])
def test_function_matches_dense_reference_with_gqa_offsets_and_padding(monkeypatch, window, chunk):
    monkeypatch.setattr(sa, "QUERY_CHUNK", chunk)
    torch.manual_seed(0)
    batch, heads, kv_heads, q_len, kv_len, dim = 2, 4, 2, 5, 9, 8  # decoding-like: 4 cached keys
    q = torch.randn(batch, heads, q_len, dim, requires_grad=True)
    k = torch.randn(batch, kv_heads, kv_len, dim, requires_grad=True)
    v = torch.randn(batch, kv_heads, kv_len, dim, requires_grad=True)
    sinks = torch.randn(heads, requires_grad=True)
    padding = torch.ones(batch, kv_len, dtype=torch.bool)
    padding[1, :3] = False  # left padding on row 1
    spec = SinkMaskSpec(batch, q_len, kv_len, q_offset=kv_len - q_len, kv_offset=0, padding=padding)
    scale = dim**-0.5
    out = sa.sink_attention(q, k, v, sinks, spec, window, scale)
    ref = _reference(q, k, v, sinks, kv_len - q_len, padding, window, scale)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    upstream = torch.randn_like(out)
    grads = torch.autograd.grad((out * upstream).sum(), (q, k, v, sinks))
    ref_grads = torch.autograd.grad((ref * upstream).sum(), (q, k, v, sinks))
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert sinks.grad is None and grads[3].abs().max() > 1e-3  # the sink gradient is real, and checked


def test_a_row_that_sees_no_key_gives_zero_and_finite_gradients():
    q = torch.randn(1, 2, 3, 4, requires_grad=True)
    k = torch.randn(1, 2, 3, 4, requires_grad=True)
    v = torch.randn(1, 2, 3, 4, requires_grad=True)
    sinks = torch.randn(2, requires_grad=True)
    padding = torch.tensor([[False, True, True]])
    out = sa.sink_attention(q, k, v, sinks, SinkMaskSpec(1, 3, 3, padding=padding), None, 0.5)
    assert out[0, :, 0].abs().max() == 0
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v, sinks))


def _config(**overrides) -> GptOssConfig:
    settings = dict(
        vocab_size=61, hidden_size=32, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, num_local_experts=4, num_experts_per_tok=2, sliding_window=WINDOW,
        layer_types=["sliding_attention", "full_attention"], max_position_embeddings=128, initializer_range=0.2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    settings.update(overrides)
    return GptOssConfig(**settings)


def _pair(dtype=torch.float32):
    """An eager gpt-oss model and a sink-flex copy with the same (random, sinks included) weights."""
    config = _config()
    torch.manual_seed(0)
    eager = AutoModelForCausalLM.from_config(copy.deepcopy(config), attn_implementation="eager")
    with torch.no_grad():
        for layer in eager.model.layers:
            layer.self_attn.sinks.normal_(0.0, 1.0)
    flex = AutoModelForCausalLM.from_config(copy.deepcopy(config), attn_implementation=sa.SINK_FLEX_ATTENTION)
    flex.load_state_dict(eager.state_dict())
    return eager.to(dtype), flex.to(dtype)


def _loss_and_grads(model, ids, mask, keep):
    model.zero_grad()
    logits = model(input_ids=ids, attention_mask=mask).logits
    loss = (logits.float().square().mean(-1) * keep).sum() / keep.sum()
    loss.backward()
    return logits.detach(), {name: p.grad.detach().clone() for name, p in model.named_parameters()}


def _batch(left_padding: int):
    torch.manual_seed(1)
    ids = torch.randint(0, 61, (2, 12))
    mask = torch.ones_like(ids)
    mask[1, :left_padding] = 0
    return ids, mask, mask.float()


def test_registered_under_its_name():
    from hindsight.policy import SINK_FLEX_ATTENTION

    assert SINK_FLEX_ATTENTION == sa.SINK_FLEX_ATTENTION and SINK_FLEX_ATTENTION in ALL_ATTENTION_FUNCTIONS
    _, flex = _pair()
    assert flex.config._attn_implementation == sa.SINK_FLEX_ATTENTION


@pytest.mark.parametrize("left_padding", [0, 3])
def test_float32_logits_and_gradients_match_eager(left_padding):
    eager, flex = _pair()
    ids, mask, keep = _batch(left_padding)
    eager_logits, eager_grads = _loss_and_grads(eager, ids, mask, keep)
    flex_logits, flex_grads = _loss_and_grads(flex, ids, mask, keep)
    real = keep.bool()
    torch.testing.assert_close(flex_logits[real], eager_logits[real], atol=1e-5, rtol=1e-5)
    sink_names = [name for name in eager_grads if name.endswith("sinks")]
    assert len(sink_names) == 2 and all(eager_grads[name].abs().max() > 1e-4 for name in sink_names)
    for name, grad in eager_grads.items():
        torch.testing.assert_close(flex_grads[name], grad, atol=1e-5, rtol=1e-4, msg=name)


def test_bfloat16_stays_within_a_stated_tolerance_of_float32_eager():
    """bf16 tolerance: logits within 0.1 absolute of float32 eager, no worse than 2x bf16 eager's own error."""
    eager32, _ = _pair()
    eager16, flex16 = _pair(torch.bfloat16)
    ids, mask, keep = _batch(3)
    real = keep.bool()
    with torch.no_grad():
        truth = eager32(input_ids=ids, attention_mask=mask).logits[real]
        flex_error = (flex16(input_ids=ids, attention_mask=mask).logits.float()[real] - truth).abs().max()
        eager_error = (eager16(input_ids=ids, attention_mask=mask).logits.float()[real] - truth).abs().max()
    assert flex_error < 0.1 and flex_error <= 2 * eager_error + 1e-2
    _, grads = _loss_and_grads(flex16, ids, mask, keep)
    assert all(torch.isfinite(g.float()).all() for g in grads.values())


def test_dropping_the_sink_or_the_wrong_window_is_caught(monkeypatch):
    eager, flex = _pair()
    ids, mask, _ = _batch(0)
    with torch.no_grad():
        truth = eager(input_ids=ids, attention_mask=mask).logits
        assert (flex(input_ids=ids, attention_mask=mask).logits - truth).abs().max() < 1e-5
        original = sa.sink_attention
        monkeypatch.setattr(sa, "sink_attention", lambda *a, **kw: original(*a, **kw, fold_sink=False))
        assert (flex(input_ids=ids, attention_mask=mask).logits - truth).abs().max() > 1e-2
        widen = lambda q, k, v, s, spec, window, scale: original(q, k, v, s, spec, window and window + 2, scale)
        monkeypatch.setattr(sa, "sink_attention", widen)
        assert (flex(input_ids=ids, attention_mask=mask).logits - truth).abs().max() > 1e-2


def test_greedy_generation_with_a_kv_cache_matches_eager():
    eager, flex = _pair()
    ids, mask, _ = _batch(3)
    settings = dict(max_new_tokens=10, do_sample=False, pad_token_id=0, use_cache=True)
    with torch.no_grad():
        want = eager.generate(input_ids=ids, attention_mask=mask, **settings)
        got = flex.generate(input_ids=ids, attention_mask=mask, **settings)
    assert want.shape[1] == ids.shape[1] + 10  # long enough for the sliding cache to drop keys
    assert torch.equal(got, want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the fused FlexAttention path needs CUDA")
def test_cuda_path_matches_dense_reference():
    torch.manual_seed(0)
    device, batch, heads, kv_heads, length, dim = "cuda", 2, 4, 2, 200, 16
    q = torch.randn(batch, heads, length, dim, device=device, requires_grad=True)
    k = torch.randn(batch, kv_heads, length, dim, device=device, requires_grad=True)
    v = torch.randn(batch, kv_heads, length, dim, device=device, requires_grad=True)
    sinks = torch.randn(heads, device=device, requires_grad=True)
    padding = torch.ones(batch, length, dtype=torch.bool, device=device)
    padding[1, :7] = False
    spec = SinkMaskSpec(batch, length, length, padding=padding, device=torch.device(device))
    for window in (None, 64):
        out = sa.sink_attention(q, k, v, sinks, spec, window, dim**-0.5)
        ref = _reference(q, k, v, sinks, 0, padding, window, dim**-0.5)
        real = padding[:, None, :, None].expand_as(out)
        torch.testing.assert_close(out[real], ref[real], atol=1e-4, rtol=1e-4)
        upstream = torch.randn_like(out) * real
        grads = torch.autograd.grad((out * upstream).sum(), (q, k, v, sinks))
        ref_grads = torch.autograd.grad((ref * upstream).sum(), (q, k, v, sinks))
        for got, want in zip(grads, ref_grads):
            torch.testing.assert_close(got, want, atol=1e-3, rtol=1e-3)

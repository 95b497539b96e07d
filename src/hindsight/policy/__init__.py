"""The policy: model + tokenizer building/loading, prompts (and the episode skill injected into
them, ``skill_injection``), the step sample and its encoding, batched generation, log-probs.

Names are imported lazily (``from hindsight.policy import Policy`` works), so that a module
needing only ``hindsight.policy.prompts`` does not pay for importing transformers. Importing
``SINK_FLEX_ATTENTION`` (or building a gpt-oss policy) registers the sink-aware FlexAttention
with transformers under that name.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Policy": "model",
    "LoraSettings": "model",
    "MODEL_PRESETS": "model",
    "build_policy": "model",
    "load_policy": "model",
    "save_policy": "model",
    "train_tokenizer": "tokenizer",
    "StepSample": "encoding",
    "TokenBatch": "encoding",
    "encode_sample": "encoding",
    "encode_ids": "encoding",
    "collate": "encoding",
    "samples_from_table": "table_samples",
    "ActionTrie": "constrained",
    "token_logprobs": "logprobs",
    "SamplingConfig": "generation",
    "Generation": "generation",
    "generate": "generation",
    "generate_text": "generation",
    "PromptConfig": "prompts",
    "build_prompt": "prompts",
    "parse_action": "prompts",
    "SINK_FLEX_ATTENTION": "sink_attention",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'hindsight.policy' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hindsight.policy.{_EXPORTS[name]}"), name)

"""What several benchmarks share: policies built from a config (random weights, nothing
downloaded), the matmul peak that achieved FLOP/s are divided by, and the weights a FLOP
count multiplies by.

Imported by ``learner_mfu.py``, ``inference_weights.py`` and ``rollout_throughput.py`` (run
as ``python benchmarks/<script>.py``, a script's own folder is first on ``sys.path``). Not a
benchmark itself.
"""

from __future__ import annotations

USED_BY = ("learner_mfu.py", "inference_weights.py", "rollout_throughput.py", "inference_backends.py")
"""The scripts that import this module (the index, ``benchmarks/README.md``)."""

import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedModel, Qwen2Config, Qwen2ForCausalLM

from hindsight.policy.lora import LoraSettings, add_lora
from hindsight.policy.model import MODEL_PRESETS

SMOLLM2_135M = dict(
    hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
    vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
    hidden_act="silu", bos_token_id=0, eos_token_id=0, pad_token_id=0,
)
"""SmolLM2-135M's configuration (its config.json), for a model with random weights."""


def build_small() -> Qwen2ForCausalLM:
    """The default run's policy (Qwen2 preset "small", 2048-token vocabulary), seed 0."""
    config = Qwen2Config(vocab_size=2048, tie_word_embeddings=True, pad_token_id=0, eos_token_id=1, bos_token_id=1, **MODEL_PRESETS["small"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return Qwen2ForCausalLM(config)


def build_smollm2(lora: LoraSettings | None = None, seed: int = 0, **overrides) -> torch.nn.Module:
    """A llama model of SmolLM2-135M's shape with random weights (``seed``); ``overrides``
    replace config entries (e.g. a tokenizer's ``pad_token_id`` / ``eos_token_id``). With
    ``lora``: the peft model with that adapter on it (the base frozen, B = 0 as peft starts)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(LlamaConfig(**{**SMOLLM2_135M, **overrides}))
    return model if lora is None else add_lora(model, lora)


def build_smollm2_lora() -> torch.nn.Module:
    """SmolLM2-135M's shape with the project's default LoRA adapter, no dropout (the learner's case)."""
    return build_smollm2(LoraSettings(dropout=0.0))


def perturb_lora(model: torch.nn.Module, seed: int = 0) -> None:
    """Draw the adapters' B matrices from N(0, 0.02), each from ``seed``, so that merging
    changes the weights."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.02, generator=torch.Generator().manual_seed(seed))


def base_model(model: torch.nn.Module) -> PreTrainedModel:
    """The HF causal LM under a peft wrapper (the model itself when there is none)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def block_linear_weights(model: torch.nn.Module, adapters: bool = True) -> tuple[int, int]:
    """(all, trainable) weights of the linear layers of the transformer blocks: the
    non-embedding parameters that matmuls use (norm vectors and biases left out). A LoRA
    adapter's A and B count among them unless ``adapters`` is False (a merged adapter)."""
    total = trainable = 0
    for name, module in base_model(model).base_model.layers.named_modules():
        if isinstance(module, torch.nn.Linear) and (adapters or "lora_" not in name):
            total += module.weight.numel()
            trainable += sum(p.numel() for p in module.parameters(recurse=False) if p.requires_grad and p.dim() == 2)
    return total, trainable


def matmul_peak(dtype: torch.dtype, sizes=(1024, 2048), repeats: int = 5) -> float:
    """Best FLOP/s of an n x n by n x n product in ``dtype`` over ``sizes``, at the current
    torch thread count."""
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        torch.matmul(a, b)  # warm-up (kernel selection)
        for _ in range(repeats):
            started = time.perf_counter()
            torch.matmul(a, b)
            best = max(best, 2 * n**3 / (time.perf_counter() - started))
    return best

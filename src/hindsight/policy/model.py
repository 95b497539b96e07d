"""Build, load and save the policy: a causal LM plus its tokenizer.

Two ways to get a policy:

- ``build_policy(preset, tokenizer, seed)``: a small Qwen2-architecture causal LM built from
  a config (no weights downloaded), sized by one of ``MODEL_PRESETS``: "tiny" (~1M
  parameters, tests), "small" (~4M, the default run), "base" (~30M, longer runs). Parameter
  counts are for a 2048-token vocabulary; the embedding grows with the tokenizer's.
- ``load_policy(model_dir)``: any local Hugging Face causal-LM directory (its own tokenizer
  and chat template), always with ``local_files_only=True``: nothing is downloaded. A peft
  LoRA adapter can be added (``lora=LoraSettings(...)``) or loaded (``adapter_dir=...``, or a
  ``model_dir`` that is itself an adapter directory written by ``save_policy``). A directory
  holding an image-text-to-text model loads as a vision policy (``policy.vision``).

``save_policy`` writes an ordinary HF directory with ``save_pretrained`` (for a LoRA policy:
the adapter directory, which names its base model) plus ``hindsight_policy.json`` holding
the policy's version.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from hindsight.policy.fresh_model import seeded_model, token_config_kwargs
from hindsight.policy.lora import ADAPTER_CONFIG_FILE, LoraSettings, add_lora, adapter_base, base_relative_to_adapter

logger = logging.getLogger(__name__)

META_FILE = "hindsight_policy.json"

MODEL_PRESETS: dict[str, dict[str, int]] = {
    "tiny": dict(hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
    "small": dict(hidden_size=256, intermediate_size=768, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
    "base": dict(hidden_size=512, intermediate_size=1792, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=4),
}
"""Qwen2 sizes: ~1M ("tiny"), ~4M ("small"), ~30M ("base") parameters with a 2048-token vocabulary."""

ARCHITECTURES = ("qwen2", "gpt_oss")
"""Architectures of the embedded policy (``build_policy(..., architecture=...)``)."""


@dataclass
class Policy:
    """A causal LM, its tokenizer and the version of the weights (the RL update count)."""

    model: PreTrainedModel
    tokenizer: Any
    version: int = 0
    vision: Any = None
    """How the policy reads a screenshot (``policy.vision.ScreenReader``); None: a text policy."""

    @property
    def device(self) -> torch.device:
        """The device the model's parameters live on."""
        return next(self.model.parameters()).device

    @property
    def is_lora(self) -> bool:
        """Whether the model is a peft model (only the adapter is trained and saved)."""
        return hasattr(self.model, "peft_config")


def count_parameters(model: torch.nn.Module, trainable_only: bool = False) -> int:
    """Number of (trainable) parameters, tied weights counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` means CUDA when available, else CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def has_native_bf16(device: torch.device) -> bool:
    """Whether bf16 matrix products run natively on ``device``: a CUDA GPU with bf16 support,
    or a CPU with the AVX512-BF16 or AMX-BF16 instructions (there bf16 autocast halves the
    time of a training step of the small policy; elsewhere it is emulated and can be slower)."""
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: do not guess
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    resolved = getattr(torch, str(dtype), None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"Unknown dtype {dtype!r}: use e.g. 'float32' or 'bfloat16'.")
    return resolved


def build_policy(
    preset: str,
    tokenizer,
    seed: int = 0,
    *,
    max_position_embeddings: int = 2048,
    device: str | torch.device | None = None,
    architecture: str = "qwen2",
    vision: bool = False,
) -> Policy:
    """Build a freshly initialised causal LM sized by ``preset`` for ``tokenizer``.

    Args:
        preset: A key of ``MODEL_PRESETS`` ("tiny", "small", "base").
        tokenizer: The tokenizer (``tokenizer.train_tokenizer``); its length is the vocab size.
        seed: Seed of the weight initialisation (the global RNG state is left untouched).
        max_position_embeddings: Longest sequence the model is configured for.
        device: Where to put the model (``None``: CUDA when available).
        architecture: One of ``ARCHITECTURES``: "qwen2", or "gpt_oss" (sliding/full layers with
            attention sinks, on the sink-aware FlexAttention; sized by ``GPT_OSS_PRESETS``).
        vision: Add a screenshot encoder (``policy.screen_model``; qwen2 only; adds the
            ``<image>`` token to ``tokenizer``).

    Returns:
        A ``Policy`` at version 0 with tied input/output embeddings.
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(f"Unknown policy architecture {architecture!r} (setting policy.architecture); "
                         f"choose one of {list(ARCHITECTURES)}.")
    if vision and architecture != "qwen2":
        raise ValueError(f"policy.vision needs architecture qwen2, got {architecture!r}")
    if architecture == "qwen2" and preset not in MODEL_PRESETS:
        raise ValueError(f"Unknown model preset {preset!r}; choose one of {sorted(MODEL_PRESETS)}.")
    if tokenizer.pad_token_id is None or tokenizer.eos_token_id is None:
        raise ValueError("build_policy: the tokenizer needs a pad and an eos token.")
    screens = None
    if vision:
        from hindsight.policy.screen_model import TinyScreens, build_screen_model

        model, kind = build_screen_model(MODEL_PRESETS[preset], tokenizer, seed, max_position_embeddings), "Qwen2 screen"
        screens = TinyScreens.of(model.config)
    elif architecture == "gpt_oss":
        from hindsight.policy.gpt_oss_policy import build_gpt_oss_model  # registers the sink-aware attention

        model, kind = build_gpt_oss_model(preset, tokenizer, seed, max_position_embeddings), "gpt-oss"
    else:
        config = Qwen2Config(**token_config_kwargs(tokenizer, max_position_embeddings), **MODEL_PRESETS[preset])
        model, kind = seeded_model(Qwen2ForCausalLM, config, seed), "Qwen2"
    model.to(resolve_device(device))
    model.eval()
    logger.info("Built a %r %s policy with %d parameters.", preset, kind, count_parameters(model))
    return Policy(model=model, tokenizer=tokenizer, version=0, vision=screens)


def _attention_for(directory: Path) -> dict[str, str]:
    """gpt-oss checkpoints (learned attention sinks) load with the sink-aware FlexAttention."""
    if json.loads((directory / "config.json").read_text()).get("model_type") != "gpt_oss":
        return {}
    from hindsight.policy.sink_attention import SINK_FLEX_ATTENTION  # importing registers it

    return {"attn_implementation": SINK_FLEX_ATTENTION}


def prepare_tokenizer(tokenizer):
    """Left padding (batched generation) and a pad token (the eos token when the tokenizer has none)."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _read_meta(directory: Path) -> dict[str, Any]:
    path = directory / META_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"Unreadable policy metadata '{path}': {error}") from error


def load_policy(
    model_dir: str | Path,
    *,
    lora: LoraSettings | dict | None = None,
    adapter_dir: str | Path | None = None,
    dtype: str | torch.dtype | None = None,
    device: str | torch.device | None = None,
    trainable: bool = True,
) -> Policy:
    """Load a policy from a local HF causal-LM directory (never from the hub).

    Args:
        model_dir: A directory with ``config.json``, weights and tokenizer files, or a LoRA
            adapter directory written by ``save_policy`` (its base model is loaded from the
            path recorded in ``adapter_config.json``).
        lora: Put a new LoRA adapter on the model (only its parameters are trainable).
        adapter_dir: Load a saved LoRA adapter on top of ``model_dir``.
        dtype: Parameter dtype ("float32", "bfloat16", a ``torch.dtype``; default float32).
        device: Where to put the model (``None``: CUDA when available).
        trainable: Whether a loaded adapter's parameters require gradients.

    Returns:
        The ``Policy``; its version comes from ``hindsight_policy.json`` when present.

    Raises:
        FileNotFoundError: ``model_dir`` (or ``adapter_dir``, or an adapter's base) is missing.
        ValueError: The directory is not a readable HF model or adapter directory.
    """
    directory = Path(model_dir)
    if not directory.is_dir():
        raise FileNotFoundError(f"Policy directory '{directory}' does not exist.")
    meta = _read_meta(directory)
    if not (directory / "config.json").is_file() and (directory / ADAPTER_CONFIG_FILE).is_file():
        if adapter_dir is not None:
            raise ValueError(f"'{directory}' is an adapter directory; do not also pass adapter_dir.")
        base_dir = adapter_base(directory)
        policy = load_policy(base_dir, dtype=dtype, device=device)
        policy = _attach_adapter(policy, directory, trainable)
        policy.tokenizer = _load_tokenizer(directory)
        policy.version = int(meta.get("version", 0))
        return policy
    if not (directory / "config.json").is_file():
        raise ValueError(f"'{directory}' is not a Hugging Face model directory (no config.json).")

    from hindsight.policy.vision import is_vision_directory, load_vision_model

    tokenizer = _load_tokenizer(directory)
    vision = None
    try:
        if is_vision_directory(directory):
            model, vision = load_vision_model(directory, _resolve_dtype(dtype), tokenizer)
        else:
            model = AutoModelForCausalLM.from_pretrained(
                directory, local_files_only=True, dtype=_resolve_dtype(dtype), **_attention_for(directory)
            )
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(f"Could not load a causal LM from '{directory}': {error}") from error
    model.to(resolve_device(device))
    model.eval()
    policy = Policy(model=model, tokenizer=tokenizer, version=int(meta.get("version", 0)), vision=vision)
    if adapter_dir is not None:
        policy = _attach_adapter(policy, Path(adapter_dir), trainable)
    settings = LoraSettings.from_params(lora)
    if settings is not None:
        if policy.is_lora:
            raise ValueError(f"'{directory}' already carries a LoRA adapter; do not also pass lora.")
        policy.model = add_lora(policy.model, settings)
    logger.info("Loaded policy from '%s' (version %d, LoRA: %s).", directory, policy.version, policy.is_lora)
    return policy


_GENERIC_TOKENIZER_CLASSES = {"TokenizersBackend", "PreTrainedTokenizerFast"}


def _load_tokenizer(directory: Path):
    """The directory's tokenizer. A generic fast tokenizer (ours) is loaded as saved:
    ``AutoTokenizer`` would rebuild it as the model type's tokenizer class instead."""
    config_path = directory / "tokenizer_config.json"
    try:
        saved_class = json.loads(config_path.read_text()).get("tokenizer_class") if config_path.is_file() else None
    except json.JSONDecodeError as error:
        raise ValueError(f"Unreadable tokenizer config '{config_path}': {error}") from error
    loader = PreTrainedTokenizerFast if saved_class in _GENERIC_TOKENIZER_CLASSES else AutoTokenizer
    try:
        tokenizer = loader.from_pretrained(directory, local_files_only=True)
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(f"Could not load a tokenizer from '{directory}': {error}") from error
    return prepare_tokenizer(tokenizer)


def _attach_adapter(policy: Policy, adapter_dir: Path, trainable: bool) -> Policy:
    from peft import PeftModel

    if not (adapter_dir / ADAPTER_CONFIG_FILE).is_file():
        raise FileNotFoundError(f"No LoRA adapter at '{adapter_dir}' ({ADAPTER_CONFIG_FILE} missing).")
    policy.model = PeftModel.from_pretrained(policy.model, adapter_dir, is_trainable=trainable)
    return policy


def save_policy(policy: Policy | PreTrainedModel, tokenizer_or_directory, directory: str | Path | None = None) -> Path:
    """Write a policy as an HF directory with ``save_pretrained``.

    Call as ``save_policy(policy, directory)`` or ``save_policy(model, tokenizer, directory)``.
    A LoRA (peft) model writes its adapter only; the adapter config names the base model
    directory, which must stay where it is.

    Args:
        policy: A ``Policy``, or a model when the tokenizer is the second argument.
        tokenizer_or_directory: The target directory, or the tokenizer.
        directory: The target directory when the tokenizer is the second argument.

    Returns:
        The directory written.
    """
    if directory is None:
        if not isinstance(policy, Policy):
            raise TypeError("save_policy(policy, directory) needs a Policy; or call save_policy(model, tokenizer, directory).")
        model, tokenizer, version, target = policy.model, policy.tokenizer, policy.version, Path(tokenizer_or_directory)
    else:
        model, tokenizer, version, target = policy, tokenizer_or_directory, 0, Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    if isinstance(policy, Policy) and policy.vision is not None:
        policy.vision.save(target)
    base_relative_to_adapter(target)
    (target / META_FILE).write_text(json.dumps({"version": int(version)}, indent=2) + "\n")
    logger.info("Saved policy (version %d) to '%s'.", version, target)
    return target

"""LoRA adapters: their settings, putting a fresh one on a model, and the base model an
adapter directory names (``policy.model`` loads and saves policies with them).

``last_layers`` adapts only the last N transformer blocks (peft ``layers_to_transform``), so
backpropagation stops at the lowest adapted block. A saved adapter names a base model inside
the project by a path relative to the adapter, so the project can move.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

ADAPTER_CONFIG_FILE = "adapter_config.json"


@dataclass
class LoraSettings:
    """A LoRA adapter to put on a loaded model (peft ``LoraConfig``)."""

    rank: int = 8
    """Rank r of the low-rank update."""
    alpha: int = 16
    """Scaling numerator: the update is scaled by alpha / rank."""
    dropout: float = 0.05
    """Dropout on the adapter's input."""
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    """Names of the linear layers that get an adapter."""
    last_layers: int | None = None
    """Adapters only in the last N transformer blocks (peft ``layers_to_transform``); null:
    every block. Backpropagation then stops at the lowest adapted block, so a training step
    of a deep model costs about forward + 2 x N / depth forwards instead of 3."""

    def __post_init__(self) -> None:
        if self.last_layers is not None and self.last_layers < 1:
            raise ValueError(f"lora.last_layers must be >= 1 or null, got {self.last_layers}")

    @classmethod
    def from_params(cls, params: "LoraSettings | dict | None") -> "LoraSettings | None":
        """Build from a parameters dict (``None`` or an empty dict: no LoRA)."""
        if params is None or isinstance(params, LoraSettings):
            return params
        return cls(**params) if params else None


def add_lora(model, settings: LoraSettings):
    """``model`` wrapped as a peft model with a fresh LoRA adapter (base weights frozen, B = 0)."""
    from peft import get_peft_model

    # an image-text-to-text model's blocks are its text model's (``get_text_config``)
    return get_peft_model(model, _lora_config(settings, model.config.get_text_config().num_hidden_layers))


def _lora_config(settings: LoraSettings, num_layers: int):
    from peft import LoraConfig

    layers = None
    if settings.last_layers is not None:
        layers = list(range(max(0, num_layers - settings.last_layers), num_layers))
    return LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )


def adapter_base(directory: Path) -> Path:
    """The base model directory an adapter directory names (absolute, or relative to the
    adapter, or to the current directory)."""
    config_path = directory / ADAPTER_CONFIG_FILE
    try:
        base = json.loads(config_path.read_text()).get("base_model_name_or_path")
    except json.JSONDecodeError as error:
        raise ValueError(f"Unreadable adapter config '{config_path}': {error}") from error
    if not base:
        raise ValueError(f"'{config_path}' names no base model (base_model_name_or_path).")
    base_dir = Path(base)
    if not base_dir.is_absolute() and (directory / base).is_dir():
        base_dir = directory / base  # relative to the adapter (save_policy writes it so)
    if not base_dir.is_dir():
        raise FileNotFoundError(f"The base model '{base}' of adapter '{directory}' does not exist.")
    return base_dir


def base_relative_to_adapter(target: Path) -> None:
    """In an adapter directory just written, name a base model inside the current directory
    (the project) by its path relative to the adapter: peft writes the path it loaded the
    base from, absolute for a catalog version, which breaks when the project moves."""
    config_path = target / ADAPTER_CONFIG_FILE
    if not config_path.is_file():
        return
    config = json.loads(config_path.read_text())
    base = Path(config.get("base_model_name_or_path") or "")
    if not base.is_absolute() or not base.is_dir() or not base.resolve().is_relative_to(Path.cwd().resolve()):
        return
    config["base_model_name_or_path"] = os.path.relpath(base.resolve(), target.resolve())
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")

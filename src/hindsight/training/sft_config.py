"""The settings of one supervised fine-tuning run (behaviour cloning, Stage 1, the world
model): ``SFTConfig``, beside its trainer ``training.sft`` (which re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass

@dataclass
class SFTConfig:
    """Settings of one supervised fine-tuning run."""

    learning_rate: float = 1e-3
    """Peak learning rate (AdamW) of an SFT run (``RLConfig.learning_rate`` is the RL update's)."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    batch_size: int = 16
    """Examples per batch (the loss is the token mean over a batch)."""
    grad_accum_steps: int = 1
    """Batches per optimizer step."""
    micro_batch_tokens: int | None = 8192
    """Padded tokens per forward/backward pass: a batch runs as pieces within this budget
    with gradients accumulated (same loss, bounded activation memory; None: whole batch). An
    SFT run's; ``RLConfig.micro_batch_tokens`` bounds the RL update's passes."""
    epochs: float = 3.0
    """Passes over the examples (fractional allowed); ``max_steps`` wins when set."""
    max_steps: int | None = None
    """Optimizer steps; None derives it from ``epochs``."""
    warmup_ratio: float = 0.05
    """Fraction of the steps with a linear warm-up."""
    min_lr_ratio: float = 0.1
    """The cosine decays to this fraction of the peak."""
    max_length: int = 1024
    """Token limit of prompt + response (oldest prompt tokens are dropped beyond it)."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm of an SFT run (``RLConfig.max_grad_norm`` clips the RL update)."""
    bf16_autocast: bool | str = False
    """Run the forward pass under bf16 autocast: true, false, or "auto" (where the device
    does bf16 natively: ``policy.model.has_native_bf16``; weights and optimizer stay fp32)."""
    time_budget_s: float | None = None
    """Stop after this many seconds of training, whatever the step count."""
    log_every: int = 10
    """Log metrics every this many optimizer steps."""

    def __post_init__(self) -> None:
        if not isinstance(self.bf16_autocast, bool) and self.bf16_autocast != "auto":
            raise ValueError(f"sft.bf16_autocast must be true, false or \"auto\", got {self.bf16_autocast!r}")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            raise ValueError(f"sft.micro_batch_tokens must be a positive token count or null, got {self.micro_batch_tokens}")

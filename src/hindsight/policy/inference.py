"""The weights rollouts decode with: LoRA merged into the base weights, and bf16 where the
device multiplies bf16 natively; the trainer's own weights stay as they are.

Two costs this removes from decoding:

- an unmerged LoRA adapter adds two small matmuls, a dropout and an add to every adapted
  linear layer at every decode step (0.42 s per decode step at batch 16 for the 135M policy
  on 2 cores, unmerged); merged, the step is the base model's;
- fp32 weights on a CPU with native bf16 run matmuls at a fraction of the bf16 rate
  (``benchmarks/learner_mfu.py`` measures both peaks); casting once per update beats
  autocasting the fp32 weights on every forward call, which converts every weight again.

``inference_policy(policy, merge_lora, dtype)`` is a context manager yielding the policy to
decode with:

- float32, LoRA: the adapter is merged into the trainer's weights on entry and unmerged on
  exit (peft ``merge_adapter`` / ``unmerge_adapter``; no copy; the round trip changes the
  weights by float rounding only);
- bfloat16 (LoRA or not): a copy, merged when LoRA (and ``merge_lora``), cast to bf16; the trainer's fp32
  weights are not touched. The copy is rebuilt for every rollout, i.e. after every update;
- float32 without LoRA, or ``merge_lora`` off: the policy itself.

Native bf16 (``dtype: auto``): ``policy.model.has_native_bf16``, i.e. a CUDA GPU that supports
bf16, or a CPU whose ``/proc/cpuinfo`` flags include ``avx512_bf16`` or ``amx_bf16`` (on
other CPUs bf16 is emulated through fp32 and is slower, so "auto" falls back to float32).
Sampling-time log-probs come from the weights that decode: under bf16 they differ from the
trainer's fp32 recomputation (logged as ``rollout/logprob_gap``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
from typing import Iterator

import torch

from hindsight.policy.model import Policy, has_native_bf16

logger = logging.getLogger(__name__)

INFERENCE_DTYPES = ("float32", "bfloat16", "auto")


def resolve_inference_dtype(dtype: str, device: torch.device, native_bf16: bool | None = None) -> torch.dtype:
    """The dtype rollouts decode with: ``float32``, ``bfloat16``, or ``auto`` = bf16 where
    the device has it natively (``native_bf16``; None: ``has_native_bf16(device)``)."""
    if dtype not in INFERENCE_DTYPES:
        raise ValueError(f"inference dtype must be one of {INFERENCE_DTYPES}, got {dtype!r}")
    if dtype == "auto":
        native = has_native_bf16(device) if native_bf16 is None else native_bf16
        return torch.bfloat16 if native else torch.float32
    return torch.bfloat16 if dtype == "bfloat16" else torch.float32


def inference_copy(model: torch.nn.Module, dtype: torch.dtype, merge_lora: bool = True) -> torch.nn.Module:
    """A copy of ``model`` in ``dtype``, gradients off, in eval mode; with ``merge_lora`` any
    LoRA adapter is merged in (the copy is then a plain HF model)."""
    replica = copy.deepcopy(model)
    if merge_lora and hasattr(replica, "merge_and_unload"):
        replica = replica.merge_and_unload()
    replica = replica.to(dtype).eval()
    for parameter in replica.parameters():
        parameter.requires_grad_(False)
    return replica


@contextlib.contextmanager
def inference_policy(policy: Policy, merge_lora: bool = True, dtype: str = "float32") -> Iterator[Policy]:
    """The policy to decode with (module docstring); the trainer's weights are as they were
    on exit, up to the float rounding of a merge/unmerge round trip."""
    target = resolve_inference_dtype(dtype, policy.device)
    current = next(policy.model.parameters()).dtype
    if target != current:
        yield dataclasses.replace(policy, model=inference_copy(policy.model, target, merge_lora))
        return
    if not (merge_lora and policy.is_lora):
        yield policy
        return
    policy.model.merge_adapter()
    try:
        yield policy
    finally:
        policy.model.unmerge_adapter()

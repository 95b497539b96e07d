"""Training checkpoints that an interrupted run resumes from, bit for bit on CPU.

A checkpoint is a directory ``<root>/update_<NNNNNN>/`` holding the policy (an ordinary HF
directory under ``policy/``) and ``state.pt``: optimizer and scheduler states, the RNG
states of Python, NumPy and torch (and of any named ``torch.Generator``), the update
counter, and any extra picklable state (the skill bank, the metric history, the last
update's rollout and skills tables).

Writes are atomic (``hindsight.atomic.atomic_directory``): the directory is written under
a temporary name and renamed when complete, so a run killed during a save leaves the
previous checkpoint as the latest one.
``latest_checkpoint`` ignores partial directories, and the next complete save removes them
(``remove_stale_partials``).

An RL run's checkpoints live under a fingerprint of its settings and starting weights
(``checkpoint_directory``), so a killed run restarted with the same inputs resumes; its KL
reference is a frozen copy of the starting model (``frozen_copy``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from hindsight.atomic import atomic_directory
from hindsight.params import as_dict

if TYPE_CHECKING:
    from hindsight.policy import Policy

CHECKPOINT_PATTERN = re.compile(r"^update_(\d{6})$")


@dataclass
class TrainingState:
    """What a resumed run needs besides the model weights."""

    update: int
    optimizer: dict[str, Any]
    scheduler: dict[str, Any] | None
    rng: dict[str, Any]
    extra: dict[str, Any]


def capture_rng_state(generators: dict[str, torch.Generator] | None = None) -> dict[str, Any]:
    """The RNG states of Python, NumPy, torch and the given named generators."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "generators": {name: gen.get_state() for name, gen in (generators or {}).items()},
    }


def restore_rng_state(state: dict[str, Any], generators: dict[str, torch.Generator] | None = None) -> None:
    """Restore what ``capture_rng_state`` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    for name, generator in (generators or {}).items():
        if name in state["generators"]:
            generator.set_state(state["generators"][name])


def save_checkpoint(
    root: str | Path,
    update: int,
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    scheduler=None,
    generators: dict[str, torch.Generator] | None = None,
    extra: dict[str, Any] | None = None,
    keep_last: int | None = 2,
) -> Path:
    """Write the checkpoint of ``update`` atomically and prune older ones.

    Args:
        root: Directory holding this run's checkpoints.
        update: Number of completed updates.
        policy: The ``hindsight.policy.Policy`` to save (model + tokenizer).
        optimizer: Its optimizer.
        scheduler: Its LR scheduler, if any.
        generators: Named torch generators whose states must be restored too.
        extra: Any other picklable state (skill bank, metric history).
        keep_last: How many checkpoints to keep (None keeps all).

    Returns:
        The checkpoint directory.
    """
    from hindsight.policy.model import save_policy

    root = Path(root)
    final = root / f"update_{update:06d}"
    with atomic_directory(final) as staging:
        save_policy(policy, staging / "policy")
        torch.save(
            {
                "update": update,
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict() if scheduler is not None else None,
                "rng": capture_rng_state(generators),
                "extra": extra or {},
            },
            staging / "state.pt",
        )
    if keep_last:
        for old in list_checkpoints(root)[:-keep_last]:
            shutil.rmtree(old, ignore_errors=True)
    remove_stale_partials(root)
    return final


def remove_stale_partials(root: str | Path) -> list[Path]:
    """Delete the staging directories (``.update_<N>.partial-*``) that a run killed during a
    checkpoint write left behind; each is a whole model copy. Call it once this run's own
    write has completed (one run writes to a checkpoint directory at a time)."""
    root = Path(root)
    stale = sorted(root.glob(".update_*.partial-*")) if root.is_dir() else []
    for directory in stale:
        shutil.rmtree(directory, ignore_errors=True)
    return stale


def list_checkpoints(root: str | Path) -> list[Path]:
    """Complete checkpoint directories under ``root``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and CHECKPOINT_PATTERN.match(p.name) and (p / "state.pt").exists()]
    return sorted(found, key=lambda p: p.name)


def latest_checkpoint(root: str | Path) -> Path | None:
    """The newest complete checkpoint under ``root``, or None."""
    checkpoints = list_checkpoints(root)
    return checkpoints[-1] if checkpoints else None


def load_training_state(checkpoint: str | Path) -> TrainingState:
    """Read ``state.pt`` of a checkpoint directory (the policy is loaded separately)."""
    state = torch.load(Path(checkpoint) / "state.pt", weights_only=False)
    return TrainingState(
        update=int(state["update"]),
        optimizer=state["optimizer"],
        scheduler=state["scheduler"],
        rng=state["rng"],
        extra=state["extra"],
    )


@dataclass
class ResumedRun:
    """Where a resumed RL run stands: the next update, the metric history so far and the
    last update's tables (so re-running a finished run returns them, not empty ones)."""

    update: int
    history: list[dict[str, float]]
    last_skills: Any
    last_rollout: Any
    task_stats: dict[str, Any] | None = None
    """The per-task pass-rate estimates (``rollout.pass_rates.PassRates.state_dict``)."""
    method_state: dict[str, Any] | None = None
    """The method's own state (``training.method.Method.state_dict``)."""


def resume_rl(checkpoint_dir: str | Path | None, policy: Policy, optimizer, generators: dict[str, torch.Generator]) -> ResumedRun | None:
    """Restore the newest checkpoint of an RL run into ``policy`` (in place), ``optimizer``
    and the RNGs; None when there is none.

    The saved weights are copied into the caller's model instead of training the loaded
    one: the policy stays trained in place, and its parameters keep their allocator-aligned
    memory (tensors read from safetensors sit at other alignments, where CPU matmul kernels
    round differently by 1-2 ulp, which broke the bit-exact resume).
    """
    checkpoint = latest_checkpoint(checkpoint_dir) if checkpoint_dir is not None else None
    if checkpoint is None:
        return None
    from hindsight.policy.model import load_policy

    state = load_training_state(checkpoint)
    saved = load_policy(checkpoint / "policy", device=policy.device)
    policy.model.load_state_dict(saved.model.state_dict())
    policy.version = saved.version
    del saved
    optimizer.load_state_dict(state.optimizer)
    restore_rng_state(state.rng, generators)
    return ResumedRun(
        update=state.update,
        history=list(state.extra.get("history", [])),
        last_skills=state.extra.get("last_skills"),
        last_rollout=state.extra.get("last_rollout"),
        task_stats=state.extra.get("task_stats"),
        method_state=state.extra.get("method_state"),
    )


def save_rl_checkpoint(checkpoint_dir: str | Path, run: ResumedRun, policy: Policy, optimizer, generators: dict[str, torch.Generator]) -> Path:
    """Checkpoint an RL run after update ``run.update`` (what ``resume_rl`` reads back)."""
    extra = {
        "history": run.history, "last_skills": run.last_skills, "last_rollout": run.last_rollout, "task_stats": run.task_stats,
        "method_state": run.method_state,
    }
    return save_checkpoint(checkpoint_dir, run.update, policy, optimizer, generators=generators, extra=extra)


def weights_fingerprint(model) -> str:
    """A short hash of a model's weights (identifies a starting checkpoint's content)."""
    digest = hashlib.sha1()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()[:12]


def checkpoint_directory(root: str | Path, settings: dict[str, Any], start_model) -> Path:
    """Checkpoints of a run live under a fingerprint of its settings and starting weights:
    a killed run restarted with the same inputs resumes; changed inputs start afresh.
    ``settings`` may hold the settings dataclasses themselves (read as ``params.as_dict``
    gives them: the same fingerprint as their plain dicts)."""
    weights = weights_fingerprint(start_model)
    blob = json.dumps(as_dict(settings), sort_keys=True, default=str)
    return Path(root) / hashlib.sha1((blob + weights).encode()).hexdigest()[:12]


def frozen_copy(model):
    """A copy of ``model`` with gradients off, in eval mode (the KL reference)."""
    reference = copy.deepcopy(model).eval()
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    return reference

"""The learner's data-parallel jobs (DDP; gloo on CPU, NCCL on GPU), reading and writing
plain files: SFT on a parquet of examples (``run_sft``), the rollout-batch file of one RL
update (``save_rollout_batch`` / ``load_rollout_batch``), the project's parameters as a Kedro
run sees them (``project_parameters``), and ``launch``, which starts the command line
(``hindsight.distributed``: ``sft``, ``rl-update``, ``rl``) under ``torchrun`` and waits.

``sft``: every rank loads the policy and the examples (columns ``prompt``, ``response``) and
runs ``train_sft`` on its stripe of every batch; ``--settings`` is a YAML mapping of
``SFTConfig`` fields (the ``sft`` block of a parameters file), plus, for multi-turn examples
(a ``header`` column: behaviour cloning with ``rollout.layout: multiturn``), ``turns``: the
``TurnBudget`` fields of the rollout settings (``max_length``, ``max_new_tokens``,
``constrained``). Rank 0 alone writes ``--out``: ``policy/`` and ``history.parquet``.
"""
from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch
import yaml

from hindsight import params
from hindsight.policy.encoding import StepSample
from hindsight.policy.model import load_policy, save_policy
from hindsight.training.data_parallel import DataParallel
from hindsight.training.episode_sft import TurnBudget
from hindsight.training.rl_config import RLConfig
from hindsight.training.sft import SFTConfig, train_sft

logger = logging.getLogger(__name__)

BATCH_KEYS = ("samples", "advantages", "old_logp", "teacher_logp", "rl", "seed")


def save_rollout_batch(
    path: str | Path,
    samples: Sequence[StepSample],
    advantages: torch.Tensor,
    old_logp: Sequence[torch.Tensor],
    teacher_logp: Sequence[torch.Tensor | None],
    config: RLConfig,
    seed: int,
) -> Path:
    """Write what one RL update needs, for ``rl-update``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "samples": list(samples), "advantages": advantages, "old_logp": list(old_logp),
            "teacher_logp": list(teacher_logp), "rl": params.as_dict(config), "seed": int(seed),
        },
        path,
    )
    return path


def load_rollout_batch(path: str | Path) -> dict:
    """Read a ``save_rollout_batch`` file, checking its fields."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Rollout batch '{path}' does not exist.")
    batch = torch.load(path, weights_only=False)  # our own file: StepSample objects
    missing = [key for key in BATCH_KEYS if key not in batch]
    if missing:
        raise ValueError(f"Rollout batch '{path}' lacks field(s) {missing}.")
    n = len(batch["samples"])
    for key in ("advantages", "old_logp", "teacher_logp"):
        if len(batch[key]) != n:
            raise ValueError(f"Rollout batch '{path}': field '{key}' has {len(batch[key])} rows, samples has {n}.")
    batch["rl"] = params.build(RLConfig, batch["rl"], "training.rl")
    return batch


def seed_everything(seed: int) -> None:
    """Python's and torch's global RNGs."""
    random.seed(seed)
    torch.manual_seed(seed)


def run_sft(policy_dir: Path, examples_path: Path, out: Path, settings_path: Path | None, seed: int, parallel: DataParallel | None) -> None:
    """The ``sft`` command (module docstring)."""
    settings = (yaml.safe_load(settings_path.read_text()) if settings_path else None) or {}
    if not isinstance(settings, dict):
        raise ValueError(f"SFT settings file '{settings_path}' must hold a mapping of SFTConfig fields, not {type(settings).__name__}.")
    turns = settings.pop("turns", None)  # multi-turn rows: the rollout's context budget
    config = params.build(SFTConfig, settings, "sft")
    budget = params.build(TurnBudget, turns, "sft.turns") if turns is not None else None
    examples = pd.read_parquet(examples_path)
    for column in ("prompt", "response"):
        if column not in examples.columns:
            raise ValueError(f"Examples file '{examples_path}' has no column '{column}'.")
    device = parallel.device if parallel is not None else None
    policy = load_policy(policy_dir, device=device)
    seed_everything(seed)
    history = train_sft(policy, examples, config, seed=seed, parallel=parallel, turns=budget)
    if parallel is None or parallel.is_writer:
        out.mkdir(parents=True, exist_ok=True)
        save_policy(policy, out / "policy")
        history.to_parquet(out / "history.parquet")


def project_parameters(conf_source: Path, env: str | None, overrides: Sequence[str]) -> dict:
    """The merged parameters of ``conf_source`` (``base`` + ``env``) with ``key.path=value``
    overrides (values read as YAML), as a Kedro run would see them."""
    from kedro.config import OmegaConfigLoader

    loader = OmegaConfigLoader(conf_source=str(conf_source), base_env="base", default_run_env=env or "base")
    parameters = dict(loader["parameters"])
    for override in overrides:
        key, separator, value = override.partition("=")
        if not separator:
            raise ValueError(f"--params {override!r}: expected key.path=value")
        block = parameters
        *parents, leaf = key.split(".")
        for parent in parents:
            block = block.setdefault(parent, {})
        block[leaf] = yaml.safe_load(value)
    return parameters


def launch(arguments: Sequence[str], processes: int, *, timeout_s: float | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the learner's command line (``hindsight.distributed``) under ``torchrun`` on this machine (``--standalone``, ``processes``
    ranks) and wait: what a Kedro node calls, then reading rank 0's files from ``--out``.

    Raises:
        RuntimeError: torchrun failed; the message holds the end of its output.
    """
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes),
               "-m", "hindsight.distributed", *map(str, arguments)]
    result = subprocess.run(command, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout_s)
    if result.returncode != 0:
        raise RuntimeError(f"torchrun exited with {result.returncode}: {result.stdout[-2000:]}{result.stderr[-4000:]}")
    return result

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

import contextlib
import logging
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd
import psutil
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


class LearnerTimeout(RuntimeError):
    """``launch``'s torchrun did not finish in time; the message holds each of its processes'
    Python stack (``py-spy dump``, where the machine allows it) and the end of its output."""


def launch(arguments: Sequence[str], processes: int, *, timeout_s: float | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the learner's command line (``hindsight.distributed``) under ``torchrun`` on this machine (``--standalone``, ``processes``
    ranks) and wait: what a Kedro node calls, then reading rank 0's files from ``--out``.

    torchrun and its ranks run in a process group of their own: on a timeout (or an
    interrupt) the whole group is killed, so no rank outlives the call.

    Raises:
        RuntimeError: torchrun failed; the message holds the end of its output.
        LearnerTimeout: torchrun ran past ``timeout_s``; the message holds the ranks' stacks.
    """
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes),
               "-m", "hindsight.distributed", *map(str, arguments)]
    process = subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stacks = process_stacks(process.pid)
        _kill_group(process)
        stdout, stderr = process.communicate()
        raise LearnerTimeout(
            f"torchrun did not finish within {timeout_s:.0f} s. Stacks of its processes:\n{stacks}\n"
            f"--- end of its output ---\n{stdout[-2000:]}{stderr[-4000:]}"
        ) from None
    except BaseException:
        _kill_group(process)
        raise
    if process.returncode != 0:
        raise RuntimeError(f"torchrun exited with {process.returncode}: {stdout[-2000:]}{stderr[-4000:]}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def process_stacks(pid: int, timeout_s: float = 30.0) -> str:
    """The Python stacks of process ``pid`` and its descendants (``py-spy dump``), or why they
    could not be read (py-spy missing, no ptrace rights)."""
    try:
        pids = [pid] + [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error as error:
        return f"(process {pid} is gone: {error})"
    dumps = []
    for each in pids:
        try:
            result = subprocess.run(["py-spy", "dump", "--pid", str(each)], capture_output=True, text=True, timeout=timeout_s)
            dumps.append(f"--- process {each} ---\n{result.stdout or result.stderr}")
        except (OSError, subprocess.TimeoutExpired) as error:
            dumps.append(f"--- process {each}: no stack ({error}) ---")
    return "\n".join(dumps)


def _kill_group(process: subprocess.Popen) -> None:
    """Kill ``process``, its process group and every descendant (torchrun starts its ranks
    in sessions of their own, so the group alone would leave them running, holding the
    output pipes open)."""
    try:
        descendants = psutil.Process(process.pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for child in descendants:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(descendants, timeout=30)
    process.wait()

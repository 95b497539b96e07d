"""The learner under ``torchrun``: SFT and the RL update as data-parallel jobs (DDP; gloo on
CPU, NCCL on GPU), launched by a user or by a Kedro node, reading and writing plain files.

    torchrun --nproc-per-node 2 -m hindsight.training.distributed sft \\
        --policy data/06_models/base_policy --examples examples.parquet --out out/ [--settings sft.yml]
    torchrun --nproc-per-node 2 -m hindsight.training.distributed rl-update \\
        --policy data/06_models/stage1_policy --batch rollout_batch.pt --out out/
    torchrun --nproc-per-node 2 -m hindsight.training.distributed rl \\
        --policy data/06_models/stage1_policy --env local --out out/ [--params training.rl.updates=8]

``rl``: the whole RL loop (``rl_run.run_rl``) with the project's parameters (``conf/base``
merged with ``--env``, then ``--params key=value`` overrides, checked like a Kedro run's):
each rank plays its share of every update's task groups, the update runs on the gathered
batch (``rl_parallel``). Checkpoints (``--checkpoints``) are written by rank 0 and resumed
by every rank. ``--out`` gets ``policy/``, ``history.parquet`` and ``last_rollout.parquet``.

``sft``: every rank loads the policy and the examples (columns ``prompt``, ``response``) and
runs ``train_sft`` on its stripe of every batch; ``--settings`` is a YAML mapping of
``SFTConfig`` fields (the ``sft`` block of a parameters file), plus, for multi-turn examples
(a ``header`` column: behaviour cloning with ``rollout.layout: multiturn``), ``turns``: the
``TurnBudget`` fields of the rollout settings (``max_length``, ``max_new_tokens``,
``constrained``).

``rl-update``: one RL update (``update_policy``) on a saved rollout batch, a ``torch.save``
file written by ``save_rollout_batch``: the step samples, their advantages, sampling-time and
teacher log-probs, the RL settings and the mini-batch seed. Without a reference the KL term
is off (``kl_coef`` 0).

Rank 0 alone writes ``--out``: ``policy/`` (``save_policy``) and ``history.parquet`` (sft) or
``metrics.json`` (rl-update; ``charts/update_seconds`` is the update's wall time). Started
without torchrun, the same command runs in one process, which is the reference the
data-parallel run must match (tests/training/test_distributed.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import subprocess
import sys
import time
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
from hindsight.training.rl_update import update_policy
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


def _seed_everything(seed: int) -> None:
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
    _seed_everything(seed)
    history = train_sft(policy, examples, config, seed=seed, parallel=parallel, turns=budget)
    if parallel is None or parallel.is_writer:
        out.mkdir(parents=True, exist_ok=True)
        save_policy(policy, out / "policy")
        history.to_parquet(out / "history.parquet")


def run_rl_update(policy_dir: Path, batch_path: Path, out: Path, parallel: DataParallel | None) -> dict[str, float]:
    """The ``rl-update`` command (module docstring); returns the update's metrics."""
    batch = load_rollout_batch(batch_path)
    config: RLConfig = batch["rl"]
    if config.kl_coef:
        logger.warning("rl-update has no reference model: the KL term is left out (kl_coef %s -> 0)", config.kl_coef)
        config.kl_coef = 0.0
    device = parallel.device if parallel is not None else None
    policy = load_policy(policy_dir, device=device)
    _seed_everything(batch["seed"])
    optimizer = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=config.learning_rate)
    generator = torch.Generator().manual_seed(batch["seed"])
    started = time.perf_counter()
    metrics = update_policy(
        policy, None, optimizer, batch["samples"], batch["advantages"], batch["old_logp"], batch["teacher_logp"],
        config, generator, parallel=parallel,
    )
    metrics["charts/update_seconds"] = time.perf_counter() - started
    policy.version += 1
    if parallel is None or parallel.is_writer:
        out.mkdir(parents=True, exist_ok=True)
        save_policy(policy, out / "policy")
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics


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


def run_rl_job(
    policy_dir: Path, parameters: dict, out: Path, checkpoints: Path | None, parallel: DataParallel | None
) -> pd.DataFrame:
    """The ``rl`` command (module docstring); returns the per-update history."""
    from hindsight.config.files import check_parameters
    from hindsight.training.rl_run import rl_setup, run_rl

    settings = check_parameters(parameters)
    project, training = settings["project"], settings["training"]
    setup = rl_setup(project, training)
    device = parallel.device if parallel is not None else None
    start = load_policy(policy_dir, device=device)
    result = run_rl(start, training.rl, setup, checkpoints, seed=project.seeds.rollouts, parallel=parallel)
    result.policy.version = start.version + training.rl.updates
    if parallel is None or parallel.is_writer:
        out.mkdir(parents=True, exist_ok=True)
        save_policy(result.policy, out / "policy")
        result.history.to_parquet(out / "history.parquet")
        result.last_rollout.to_parquet(out / "last_rollout.parquet")
    return result.history


def launch(arguments: Sequence[str], processes: int, *, timeout_s: float | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run this module under ``torchrun`` on this machine (``--standalone``, ``processes``
    ranks) and wait: what a Kedro node calls, then reading rank 0's files from ``--out``.

    Raises:
        RuntimeError: torchrun failed; the message holds the end of its output.
    """
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes),
               "-m", "hindsight.training.distributed", *map(str, arguments)]
    result = subprocess.run(command, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout_s)
    if result.returncode != 0:
        raise RuntimeError(f"torchrun exited with {result.returncode}: {result.stdout[-2000:]}{result.stderr[-4000:]}")
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="hindsight.training.distributed", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    sft = commands.add_parser("sft", help="supervised fine-tuning on a parquet of (prompt, response) examples")
    sft.add_argument("--policy", type=Path, required=True, help="HF model (or LoRA adapter) directory to start from")
    sft.add_argument("--examples", type=Path, required=True, help="parquet with columns prompt, response")
    sft.add_argument("--settings", type=Path, default=None, help="YAML mapping of SFTConfig fields")
    sft.add_argument("--seed", type=int, default=0)
    sft.add_argument("--out", type=Path, required=True)
    update = commands.add_parser("rl-update", help="one RL update on a saved rollout batch")
    update.add_argument("--policy", type=Path, required=True)
    update.add_argument("--batch", type=Path, required=True, help="file written by save_rollout_batch")
    update.add_argument("--out", type=Path, required=True)
    loop = commands.add_parser("rl", help="the RL loop with the project's parameters, rollouts sharded across ranks")
    loop.add_argument("--policy", type=Path, required=True, help="the starting policy (also the KL reference)")
    loop.add_argument("--conf", type=Path, default=Path("conf"), help="the project's conf directory")
    loop.add_argument("--env", default=None, help="configuration environment over base (e.g. local, test)")
    loop.add_argument("--params", action="append", default=[], help="key.path=value override (repeatable)")
    loop.add_argument("--checkpoints", type=Path, default=None, help="checkpoint directory (resumed when present)")
    loop.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    parallel = DataParallel.from_environment()
    try:
        if args.command == "sft":
            run_sft(args.policy, args.examples, args.out, args.settings, args.seed, parallel)
        elif args.command == "rl":
            run_rl_job(args.policy, project_parameters(args.conf, args.env, args.params), args.out, args.checkpoints, parallel)
        else:
            run_rl_update(args.policy, args.batch, args.out, parallel)
        if parallel is not None:
            parallel.barrier()  # rank 0's files are complete when every rank returns
    finally:
        if parallel is not None:
            torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()

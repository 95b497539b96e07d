"""The learner under ``torchrun``: SFT, one RL update and the whole RL loop as data-parallel
jobs (DDP; gloo on CPU, NCCL on GPU), launched by a user or by a Kedro node
(``training.torchrun_jobs.launch``), reading and writing plain files.

    torchrun --nproc-per-node 2 -m hindsight.distributed sft \\
        --policy data/06_models/base_policy --examples examples.parquet --out out/ [--settings sft.yml]
    torchrun --nproc-per-node 2 -m hindsight.distributed rl-update \\
        --policy data/06_models/stage1_policy --batch rollout_batch.pt --out out/
    torchrun --nproc-per-node 2 -m hindsight.distributed rl \\
        --policy data/06_models/stage1_policy --env local --out out/ [--params training.rl.updates=8]

``rl``: the whole RL loop (``runs.rl_run.run_rl``) with the project's parameters (``conf/base``
merged with ``--env``, then ``--params key=value`` overrides, checked like a Kedro run's):
each rank plays its share of every update's task groups, the update runs on the gathered
batch (``training.rl_parallel``). Checkpoints (``--checkpoints``) are written by rank 0 and
resumed by every rank. ``--out`` gets ``policy/``, ``history.parquet`` and ``last_rollout.parquet``.

``sft``: ``training.torchrun_jobs.run_sft``.

``rl-update``: one RL update (``update_policy``) on a saved rollout batch, a ``torch.save``
file written by ``training.torchrun_jobs.save_rollout_batch``: the step samples, their
advantages, sampling-time and teacher log-probs, the RL settings (its method among them)
and the mini-batch seed. Without a reference the KL term is off (``kl_coef`` 0).

Rank 0 alone writes ``--out``: ``policy/`` (``save_policy``) and ``history.parquet`` (sft) or
``metrics.json`` (rl-update; ``charts/update_seconds`` is the update's wall time). Started
without torchrun, the same command runs in one process, which is the reference the
data-parallel run must match (tests/training/test_distributed.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from hindsight.config import rl_setup
from hindsight.config.files import check_parameters
from hindsight.methods.registry import build_method
from hindsight.runs.rl_run import run_rl
from hindsight.policy.model import load_policy, save_policy
from hindsight.training.batch import RolloutBatch
from hindsight.training.data_parallel import DataParallel
from hindsight.training.torchrun_jobs import load_rollout_batch, project_parameters, run_sft, seed_everything
from hindsight.training.rl_config import RLConfig
from hindsight.training.update import update_policy

logger = logging.getLogger(__name__)


def run_rl_update(policy_dir: Path, batch_path: Path, out: Path, parallel: DataParallel | None) -> dict[str, float]:
    """The ``rl-update`` command (module docstring); returns the update's metrics."""
    batch = load_rollout_batch(batch_path)
    config: RLConfig = batch["rl"]
    if config.kl_coef:
        logger.warning("rl-update has no reference model: the KL term is left out (kl_coef %s -> 0)", config.kl_coef)
        config.kl_coef = 0.0
    device = parallel.device if parallel is not None else None
    policy = load_policy(policy_dir, device=device)
    seed_everything(batch["seed"])
    optimizer = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=config.learning_rate)
    generator = torch.Generator().manual_seed(batch["seed"])
    started = time.perf_counter()
    rollout = RolloutBatch(
        table=pd.DataFrame(), samples=list(batch["samples"]), played=pd.DataFrame(),
        old_logp=list(batch["old_logp"]), teacher_logp=list(batch["teacher_logp"]), advantages=batch["advantages"],
    )
    metrics = update_policy(policy, None, optimizer, rollout, config, build_method(config), generator, parallel=parallel)
    metrics["charts/update_seconds"] = time.perf_counter() - started
    policy.version += 1
    if parallel is None or parallel.is_writer:
        out.mkdir(parents=True, exist_ok=True)
        save_policy(policy, out / "policy")
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics


def run_rl_job(
    policy_dir: Path, parameters: dict, out: Path, checkpoints: Path | None, parallel: DataParallel | None
) -> pd.DataFrame:
    """The ``rl`` command (module docstring); returns the per-update history."""
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="hindsight.distributed", description=__doc__.split("\n\n")[0])
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

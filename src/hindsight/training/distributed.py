"""The learner under ``torchrun``: SFT and the RL update as data-parallel jobs (DDP; gloo on
CPU, NCCL on GPU), launched by a user or by a Kedro node, reading and writing plain files.

    torchrun --nproc-per-node 2 -m hindsight.training.distributed sft \\
        --policy data/06_models/base_policy --examples examples.parquet --out out/ [--settings sft.yml]
    torchrun --nproc-per-node 2 -m hindsight.training.distributed rl-update \\
        --policy data/06_models/stage1_policy --batch rollout_batch.pt --out out/

``sft``: every rank loads the policy and the examples (columns ``prompt``, ``response``) and
runs ``train_sft`` on its stripe of every batch; ``--settings`` is a YAML mapping of
``SFTConfig`` fields (the ``sft`` block of a parameters file).

``rl-update``: one RL update (``update_policy``) on a saved rollout batch, a ``torch.save``
file written by ``save_rollout_batch``: the step samples, their advantages, sampling-time and
teacher log-probs, the RL settings and the mini-batch seed. Without a reference the KL term
is off (``kl_coef`` 0).

Rank 0 alone writes ``--out``: ``policy/`` (``save_policy``) and ``history.parquet`` (sft) or
``metrics.json`` (rl-update). Started without torchrun, the same command runs in one
process, which is the reference the data-parallel run must match (tests/training/
test_distributed.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch
import yaml

from hindsight import params
from hindsight.policy.encoding import StepSample
from hindsight.policy.model import load_policy, save_policy
from hindsight.training.data_parallel import DataParallel
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
    settings = yaml.safe_load(settings_path.read_text()) if settings_path else {}
    config = params.build(SFTConfig, settings, "sft")
    examples = pd.read_parquet(examples_path)
    for column in ("prompt", "response"):
        if column not in examples.columns:
            raise ValueError(f"Examples file '{examples_path}' has no column '{column}'.")
    device = parallel.device if parallel is not None else None
    policy = load_policy(policy_dir, device=device)
    _seed_everything(seed)
    history = train_sft(policy, examples, config, seed=seed, parallel=parallel)
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
    metrics = update_policy(
        policy, None, optimizer, batch["samples"], batch["advantages"], batch["old_logp"], batch["teacher_logp"],
        config, generator, parallel=parallel,
    )
    policy.version += 1
    if parallel is None or parallel.is_writer:
        out.mkdir(parents=True, exist_ok=True)
        save_policy(policy, out / "policy")
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return metrics


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
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    parallel = DataParallel.from_environment()
    try:
        if args.command == "sft":
            run_sft(args.policy, args.examples, args.out, args.settings, args.seed, parallel)
        else:
            run_rl_update(args.policy, args.batch, args.out, parallel)
        if parallel is not None:
            parallel.barrier()  # rank 0's files are complete when every rank returns
    finally:
        if parallel is not None:
            torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()

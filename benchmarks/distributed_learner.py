"""Wall time of one RL update (``update_policy``) in one process and under ``torchrun`` with
DDP on this machine's CPU cores (gloo), on the same rollout batch, in the same run.

The batch: ``--samples`` step samples of ``--length`` tokens (``--response`` of them the
response) with random token ids, advantages of both signs, the sampling-time log-probs of
the starting policy (the Qwen2 "small" preset, the default run's, with a tokenizer trained
on a few lines of text: token values do not change the cost). Variants:

- 1 process, 1 thread (the reference);
- 1 process, ``--processes`` threads (intra-op parallelism);
- ``--processes`` processes x 1 thread under torchrun (data parallelism; the time is rank
  0's ``charts/update_seconds``, the update alone, without process start-up).

Also prints the largest weight difference between the one-process and the torchrun update.

Run from the project root (prints its figures; not a test):

    python benchmarks/distributed_learner.py
    python benchmarks/distributed_learner.py --samples 128 --processes 2
"""

from __future__ import annotations

GROUP = "hardware"
REPRODUCES = ("docs/scale.md#the-learner-mfu-rollout-weights-and-training-on-several-processes",)
MEASURED = (
    "run time not given; one update 19.3 s in 1 process, 12.7 s under torchrun, on 2 shared cores (CPU "
    "not named)"
)
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/scale.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from hindsight.distributed import run_rl_update  # noqa: E402
from hindsight.policy.encoding import encode_ids  # noqa: E402
from hindsight.policy.model import build_policy, load_policy, save_policy  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.training.distillation import response_logprobs  # noqa: E402
from hindsight.training.torchrun_jobs import launch, save_rollout_batch  # noqa: E402
from hindsight.training.rl_config import RLConfig  # noqa: E402

TEXTS = ["You are in the kitchen. You see a fridge, a counter and a red apple.", "take red apple", "put red apple in fridge"] * 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--length", type=int, default=320)
    parser.add_argument("--response", type=int, default=6)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    root = Path(tempfile.mkdtemp(prefix="distributed_learner_"))
    tokenizer = train_tokenizer(TEXTS, vocab_size=2048)
    policy = build_policy("small", tokenizer, seed=0, device="cpu")
    start = save_policy(policy, root / "start")
    generator = torch.Generator().manual_seed(0)
    samples = []
    for _ in range(args.samples):
        ids = torch.randint(3, len(tokenizer), (args.length,), generator=generator).tolist()
        samples.append(encode_ids(ids[: -args.response], ids[-args.response :], None))
    old = response_logprobs(policy.model, samples, 16, tokenizer.pad_token_id)
    config = RLConfig(algorithm="grpo", kl_coef=0.0, learning_rate=1e-4, mini_batch_size=args.samples, micro_batch_tokens=4096)
    batch = save_rollout_batch(root / "batch.pt", samples, torch.linspace(-1, 1, args.samples), old, [None] * args.samples, config, seed=0)
    print(f"one RL update: {args.samples} samples x {args.length} tokens, small policy, micro-batches of {config.micro_batch_tokens} tokens")

    figures = {}
    for threads in (1, args.processes):
        torch.set_num_threads(threads)
        metrics = run_rl_update(start, batch, root / f"single_{threads}", parallel=None)
        figures[f"1 process x {threads} thread(s)"] = metrics["charts/update_seconds"]
    torch.set_num_threads(1)
    launch(["rl-update", "--policy", start, "--batch", batch, "--out", root / "ddp"], args.processes, env={"OMP_NUM_THREADS": "1"})
    figures[f"{args.processes} processes x 1 thread (torchrun, gloo)"] = json.loads((root / "ddp" / "metrics.json").read_text())["charts/update_seconds"]
    baseline = figures["1 process x 1 thread(s)"]
    for variant, seconds in figures.items():
        print(f"  {variant:40s} {seconds:7.2f} s  {baseline / seconds:5.2f}x")
    single = load_policy(root / "single_1" / "policy", device="cpu").model.state_dict()
    parallel = load_policy(root / "ddp" / "policy", device="cpu").model.state_dict()
    print(f"  largest weight difference, 1 process vs torchrun: {max(float((single[k] - parallel[k]).abs().max()) for k in single):.2e}")


if __name__ == "__main__":
    main()

"""Peak memory and time of the training passes, with and without the memory measures.

Two measures bound the memory of the default run (docs/results.md, "The default
``kedro run``"):

- RL updates and SFT batches run as micro-batches of at most ``micro_batch_tokens`` padded
  tokens with gradients accumulated (``training.rl.micro_batch_tokens``,
  ``SFTConfig.micro_batch_tokens``): the activation memory follows the budget, not the
  mini-batch size;
- under bf16 autocast on a CPU, every new sequence length builds new oneDNN kernels that
  stay cached, so SFT pads batch lengths to a multiple of 64.

Each variant runs in a fresh Python process (a process never hands freed memory back in
full, so variants sharing one would measure each other) on the small (~4M) policy with
random token sequences of realistic lengths (200-900 tokens, the same ones for every
variant), and reports its peak resident memory and seconds; ratios are against the
baseline of the same group, measured in the same run.

Run from the project root (prints its figures; not a test):

    python benchmarks/training_memory.py
    python benchmarks/training_memory.py --steps 10
"""

from __future__ import annotations

GROUP = "run-time"
REPRODUCES = (
    "docs/journal/2026-11-30-json-skills-default.md#the-default-kedro-run-previous-default-json-skills-stage-1-of-80-steps",
)
MEASURED = "run time not given (`--steps 2` in the journal, an idle machine, CPU not named)"
LAST_RUN = "by 2026-11-30 (the journal entry's date)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import json
import random
import resource
import subprocess
import sys
import time

VARIANTS = {
    # group: [(variant, description)], the first of a group is its baseline
    "rl": [
        ("rl-whole", "RL update, 64 samples in one pass"),
        ("rl-micro", "RL update, micro-batches of 8192 padded tokens"),
    ],
    "sft": [
        ("sft-fp32", "SFT, float32"),
        ("sft-bf16", "SFT, bf16 autocast, any length"),
        ("sft-bf16-pad64", "SFT, bf16 autocast, lengths padded to x64"),
    ],
}


SIZES = {
    "real": {"rl_samples": 64, "sft_samples": 16, "lengths": (200, 900), "micro_tokens": 8192},
    "tiny": {"rl_samples": 4, "sft_samples": 2, "lengths": (16, 48), "micro_tokens": 64},
}
"""Samples per RL update and per SFT batch, token lengths, the RL micro-batch budget: the
measured sizes, and ``--tiny``'s (the same code path on the smallest input)."""


def _lengths(count: int, seed: int, bounds: tuple[int, int]) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(*bounds) for _ in range(count)]


def _samples(lengths, vocab: int, seed: int):
    import torch

    from hindsight.policy.encoding import StepSample

    generator = torch.Generator().manual_seed(seed)
    samples = []
    for length in lengths:
        ids = torch.randint(3, vocab, (length,), generator=generator).tolist()
        samples.append(StepSample(prompt_ids=ids[:-4], response_ids=ids[-4:]))
    return samples


def run_variant(variant: str, steps: int, size: str = "real") -> dict:
    """One variant in this process; returns its seconds and peak resident memory."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from hindsight.policy.batching import token_budget_chunks
    from hindsight.policy.encoding import collate
    from hindsight.policy.logprobs import token_logprobs
    from hindsight.policy.model import MODEL_PRESETS

    torch.manual_seed(0)
    sizes = SIZES[size]
    vocab = 2048
    config = Qwen2Config(vocab_size=vocab, max_position_embeddings=1024, tie_word_embeddings=True, **MODEL_PRESETS["small"])
    model = Qwen2ForCausalLM(config)
    model.train()
    started = time.perf_counter()
    for step in range(steps):
        if variant.startswith("rl"):
            count = sizes["rl_samples"]
            samples = _samples(_lengths(count, step, sizes["lengths"]), vocab, step)
            order = sorted(range(count), key=lambda i: len(samples[i].input_ids))
            lengths = [len(s.input_ids) for s in samples]
            parts = token_budget_chunks(order, lengths, sizes["micro_tokens"] if variant == "rl-micro" else None)
        else:
            samples = _samples(_lengths(sizes["sft_samples"], step, sizes["lengths"]), vocab, step)
            parts = [list(range(sizes["sft_samples"]))]
        for part in parts:
            pad = 64 if variant == "sft-bf16-pad64" else None
            batch = collate([samples[i] for i in part], pad_token_id=0, pad_to_multiple_of=pad)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=variant.startswith("sft-bf16")):
                logp = token_logprobs(model, batch)
            (-(logp * batch.response_mask).sum() / 64).backward()
        model.zero_grad(set_to_none=True)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"variant": variant, "seconds": seconds, "peak_mb": peak_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps per variant (each a new set of lengths)")
    parser.add_argument("--tiny", action="store_true", help="the smallest input (a smoke run: figures meaningless)")
    parser.add_argument("--variant", nargs="+", help="run these variants in this process (the script runs each in its own)")
    args = parser.parse_args()
    size = "tiny" if args.tiny else "real"
    if args.variant:
        for variant in args.variant:
            print(json.dumps(run_variant(variant, args.steps, size)))
        return
    for group, variants in VARIANTS.items():
        results = []
        for variant, description in variants:
            output = subprocess.run(
                [sys.executable, __file__, "--variant", variant, "--steps", str(args.steps), *(["--tiny"] if args.tiny else [])],
                check=True, capture_output=True, text=True,
            ).stdout.strip().splitlines()[-1]
            results.append((description, json.loads(output)))
        base = results[0][1]
        print(f"\n{group}: {args.steps} steps per variant")
        for description, result in results:
            print(
                f"  {description:<46} {result['seconds']:7.1f} s ({result['seconds'] / base['seconds']:.2f}x)"
                f"  peak {result['peak_mb']:6.0f} MB ({result['peak_mb'] / base['peak_mb']:.2f}x)"
            )


if __name__ == "__main__":
    main()

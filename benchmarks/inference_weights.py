"""Decode-step time with the weights rollouts can use (``policy.inference``): an unmerged
LoRA adapter, the adapter merged, bf16 autocast over fp32 weights, and a bf16 copy; and the
log-prob gap a bf16 copy opens against the fp32 trainer.

One decode step: ``--batch`` rows, each with a KV cache of a ``--prompt``-token prefill, one
new token per row through the model (what the rollout engine's token loop does). Timed as
the median of ``--steps`` steps after a warm-up, all variants in the same run. Policies:
``small`` (the default run's Qwen2 preset, full weights) and ``smollm2-135m`` (SmolLM2-135M's
shape with random weights and the default LoRA adapter, its B matrices made non-zero so
that merging changes something; nothing downloaded).

The log-prob gap: mean and max |log p_bf16 - log p_fp32| of the next token sampled from the
fp32 model, over the prefill positions of the batch (random weights: a trained model's
logits are sharper, its gap can differ).

Run from the project root (prints its figures; not a test):

    python benchmarks/inference_weights.py
    python benchmarks/inference_weights.py --threads 2 --models smollm2-135m
"""

from __future__ import annotations

GROUP = "hardware"
REPRODUCES = ("docs/scale.md#the-learner-mfu-rollout-weights-and-training-on-several-processes",)
MEASURED = "run time not given; CPU not named (the section's other figures: a shared 2-core AMD EPYC)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/scale.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import contextlib
import os
import statistics
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from transformers import DynamicCache  # noqa: E402

from hindsight.policy.inference import inference_policy  # noqa: E402
from hindsight.policy.model import Policy, has_native_bf16  # noqa: E402

from bench_models import build_small, build_smollm2_lora, perturb_lora  # noqa: E402


def decode_step_seconds(model, batch: int, prompt: int, steps: int, autocast: bool) -> float:
    """Median seconds of one batched decode step over a KV cache of ``prompt`` tokens."""
    vocab = model.get_input_embeddings().weight.shape[0]
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(3, vocab, (batch, prompt), generator=generator)
    context = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    times = []
    with torch.no_grad(), context:
        cache = DynamicCache()
        output = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        token = output.logits[:, -1].argmax(-1, keepdim=True)
        for step in range(steps + 1):
            started = time.perf_counter()
            output = model(input_ids=token, past_key_values=output.past_key_values, use_cache=True)
            token = output.logits[:, -1].argmax(-1, keepdim=True)
            if step:
                times.append(time.perf_counter() - started)
    return statistics.median(times)


def logprob_gap(fp32_model, bf16_model, batch: int, prompt: int) -> tuple[float, float]:
    vocab = fp32_model.get_input_embeddings().weight.shape[0]
    ids = torch.randint(3, vocab, (batch, prompt), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        reference = torch.log_softmax(fp32_model(input_ids=ids).logits.float(), -1)
        rounded = torch.log_softmax(bf16_model(input_ids=ids).logits.float(), -1)
    chosen = torch.distributions.Categorical(logits=reference).sample()
    gap = (reference.gather(-1, chosen[..., None]) - rounded.gather(-1, chosen[..., None])).abs()
    return float(gap.mean()), float(gap.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", default="small,smollm2-135m")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--prompt", type=int, default=300)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), native bf16: {has_native_bf16(torch.device('cpu'))}; "
          f"decode step at batch {args.batch} over a {args.prompt}-token cache, median of {args.steps}")
    for name in args.models.split(","):
        model = build_small() if name == "small" else build_smollm2_lora()
        model.eval()
        if hasattr(model, "peft_config"):
            perturb_lora(model)
        policy = Policy(model=model, tokenizer=None)
        figures = {}
        label = "unmerged adapter" if policy.is_lora else "weights"
        figures[f"fp32 {label}"] = decode_step_seconds(model, args.batch, args.prompt, args.steps, autocast=False)
        figures[f"fp32 {label}, bf16 autocast"] = decode_step_seconds(model, args.batch, args.prompt, args.steps, autocast=True)
        if policy.is_lora:
            with inference_policy(policy, merge_lora=True, dtype="float32") as actor:
                figures["fp32 merged"] = decode_step_seconds(actor.model, args.batch, args.prompt, args.steps, autocast=False)
        started = time.perf_counter()
        with inference_policy(policy, merge_lora=True, dtype="bfloat16") as actor:
            copy_seconds = time.perf_counter() - started
            figures["bf16 copy" + (", merged" if policy.is_lora else "")] = decode_step_seconds(actor.model, args.batch, args.prompt, args.steps, autocast=False)
            mean_gap, max_gap = logprob_gap(model, actor.model, 4, 128)
        baseline = figures[f"fp32 {label}"]
        print(f"\n== {name} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters)")
        for variant, seconds in figures.items():
            print(f"  {variant:34s} {seconds * 1000:8.1f} ms/step  {baseline / seconds:5.2f}x")
        print(f"  making the bf16 copy: {copy_seconds:.2f} s (once per update); "
              f"log-prob gap bf16 vs fp32: mean {mean_gap:.4f}, max {max_gap:.4f} nats per token")


if __name__ == "__main__":
    main()

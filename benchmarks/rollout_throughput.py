"""Throughput of the batched rollout engine against one episode at a time, and the model
FLOP/s it reaches as a fraction of this machine's matmul peak.

Policies (``--models``, comma-separated; each gets a tokenizer trained on the prompts and
actions of ``--gold-episodes`` gold episodes of TextWorldExpress twc, with the project's
``policy.tokenizer.train_tokenizer``):

- ``small``: the default run's policy (Qwen2 preset "small", ``policy.model.build_policy``;
  ~4M parameters at a 2048-token vocabulary, its embedding sized to the tokenizer trained
  with ``vocab_size=2048``);
- ``smollm2-135m`` (or ``135m``): a llama model of SmolLM2-135M's shape (576 hidden, 30
  layers, 9 heads / 3 KV heads, 1536 MLP, 49152-token vocabulary, tied embeddings) with
  random weights built from the config (``bench_models.build_smollm2``; nothing is
  downloaded). Its tokenizer is ours, trained with ``vocab_size=49152`` (the corpus is small,
  so it stops far below that, at hundreds to a few thousand tokens; the model keeps
  SmolLM2's 49152-row embedding and LM head, whose cost is what the figures need). ``--lora`` (default ``merged``) puts the
  project's default LoRA adapter on it (rank 8 on q/k/v/o, B drawn non-zero) and rolls out
  with it merged through ``policy.inference.inference_policy`` as the RL loop does
  (``training.rl.rollout_weights.merge_lora``; fp32); ``unmerged`` decodes through the adapter, ``none`` omits it;
- ``--policy DIR`` adds a local Hugging Face directory (``policy.model.load_policy``, its
  own tokenizer; e.g. the real SmolLM2-135M-Instruct, a version directory of the catalog's
  ``data/06_models/pretrained_model``), rolled out like the 135M model.

Each policy plays the SAME tasks (seeds) in one process with:

- naive: the engine with one episode at a time (``max_parallel=1``), step-wise layout: one
  prompt per call, re-read whole at every step;
- batched: ``--parallel`` episodes at once (default 32), step-wise layout: one generation
  call per turn;
- multiturn: ``--parallel`` episodes at once in the multi-turn layout: each episode one token
  sequence whose KV cache is kept across turns, only the new observation prefilled;
- hf-generate (``--hf-generate``): the textbook loop, one episode at a time,
  ``model.generate`` with ``prefix_allowed_tokens_fn`` over the same action trie.

All use the same decoding (constrained, temperature 0.4), prompts and tasks. The modes are
interleaved over ``--rounds`` rounds and the medians reported, because a shared machine's
load drifts; "cpu" is the process's CPU time over wall time x torch threads (well below 1.0
means other processes took the cores; "env steps per CPU second" divides by this process's
CPU time instead of the wall clock, the steadier figure on a loaded machine, though it leaves
out the environment's JVM). Sizes default per policy: small 8 tasks x 4 episodes, 15 steps,
3 rounds; 135M (and ``--policy``) 2 tasks x 4 episodes, 8 steps, 1 round; ``--tasks``,
``--group-size``, ``--max-steps``, ``--rounds`` set them for every policy.

Model FLOPs of a rollout (``rollout_flops``; counted from what each forward call feeds the
decoder, padding left out):

    FLOPs = 2 N P + 4 w L C + 2 V h G

N: weights of the blocks' linear layers (the non-embedding parameters less norms and biases;
a merged adapter adds none); P: real token positions fed, prefill + decode (a group's
identical prompt read once counts once); w: query heads x head dim; L: layers; C: over those
positions, the keys each attends to, itself included (QK^T and AV); V h: the LM head's
vocabulary x hidden size; G: generated tokens (one logits row each; ``logits_to_keep``
spares the others). Unmerged adapters, norms, softmax and sampling are not counted. The
achieved FLOP/s (FLOPs over the mode's wall time, environment included; also over the
engine's generation seconds) is divided by the fp32 peak of square matmuls measured at the
start of the run with the same threads (``bench_models.matmul_peak``, also used by
``learner_mfu.py``): rollouts decode in fp32 (``rollout_weights.dtype: float32``); ``--bf16-peak``
also measures the bf16 peak and reports against it (minutes on a CPU without native bf16).

A benchmark, not a test. Expected wall time on 2 CPU cores (estimates, from short runs on a
shared machine): small ~4 minutes, 135M ~5 minutes:

    python benchmarks/rollout_throughput.py                         # both policies, ~10 minutes
    python benchmarks/rollout_throughput.py --models small          # ~4 minutes
    python benchmarks/rollout_throughput.py --models 135m --lora unmerged
    python benchmarks/rollout_throughput.py --tasks 2 --group-size 2 --max-steps 4 --rounds 1  # ~2 minutes
"""

from __future__ import annotations

GROUP = "hardware"
REPRODUCES = ("docs/scale.md#multi-turn-layout-token-in--token-out-a-kv-cache-per-episode", "docs/known_limits.md")
MEASURED = (
    "10 min 47 s for SmolLM2-135M-Instruct (2 tasks x 4, 8 steps, 1 thread, the other core busy; CPU not "
    "named); the docstring estimates small ~4 min, 135M ~5 min on 2 cores"
)
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/scale.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import logging
import os
import statistics

import torch

from hindsight.envs import make_env
from hindsight.policy.inference import inference_policy
from hindsight.policy.lora import LoraSettings
from hindsight.policy.model import Policy, build_policy, count_parameters, load_policy
from hindsight.policy.generation import SamplingConfig
from hindsight.policy.prompts import PromptConfig
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.rollout import RolloutConfig, make_tasks

from bench_models import SMOLLM2_135M, build_smollm2, matmul_peak, perturb_lora
from rollout_flops import ModelShape
from rollout_modes import gold_texts, run_engine, run_hf_generate, timed, twc_spec

logger = logging.getLogger(__name__)

ALIASES = {"small": "small", "smollm2-135m": "smollm2-135m", "135m": "smollm2-135m"}
SIZES = {
    "small": dict(tasks=8, group_size=4, max_steps=15, rounds=3),
    "large": dict(tasks=2, group_size=4, max_steps=8, rounds=1),
}
"""Default sizes: the small policy's, and the 135M (or ``--policy``) model's."""
PAIRS = (("batched", "naive"), ("multiturn", "naive"), ("multiturn", "batched"))


def make_policy(name: str, texts: list[str], lora: str) -> Policy:
    """The policy ``name`` stands for (module docstring), on the CPU, in eval mode."""
    if name == "small":
        return build_policy("small", train_tokenizer(texts, vocab_size=2048), seed=0, device="cpu")
    if name == "smollm2-135m":
        tokenizer = train_tokenizer(texts, vocab_size=SMOLLM2_135M["vocab_size"])
        ids = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
        model = build_smollm2(None if lora == "none" else LoraSettings(), **ids)
        if lora != "none":
            perturb_lora(model)
        return Policy(model=model.eval(), tokenizer=tokenizer)
    return load_policy(name, device="cpu", trainable=False)


def describe(name: str, policy: Policy, lora: str) -> str:
    """One line: the policy's size and how its adapter decodes."""
    shape = ModelShape.of(policy.model)
    adapter = f", LoRA adapter {lora}" if policy.is_lora else ""
    return (
        f"{name}: {count_parameters(policy.model) / 1e6:.1f}M parameters ({shape.linear_weights / 1e6:.1f}M in the blocks' "
        f"linear layers), model vocab {shape.vocab}, tokenizer {len(policy.tokenizer)}{adapter}"
    )


def sizes_for(name: str, args: argparse.Namespace) -> dict[str, int]:
    """The policy's default sizes, overridden by the flags given."""
    sizes = dict(SIZES["small" if name == "small" else "large"])
    for key in sizes:
        if getattr(args, key) is not None:
            sizes[key] = getattr(args, key)
    return sizes


def benchmark(name: str, texts: list[str], args: argparse.Namespace, peaks: dict[str, float]) -> None:
    """Time every mode on one policy and print its figures."""
    sizes = sizes_for(name, args)
    spec = twc_spec(sizes["max_steps"])
    probe = make_env(spec)
    tasks = make_tasks(spec, "train", probe.seeds("train", sizes["tasks"], offset=100))
    probe.close()
    policy = make_policy(name, texts, args.lora)
    print(f"\n== {describe(name, policy, args.lora)}")
    print(f"   {len(tasks)} tasks x {sizes['group_size']} episodes, max {sizes['max_steps']} steps, {sizes['rounds']} rounds")
    prompt = PromptConfig(show_valid_actions=not args.no_valid_actions)
    base = dict(group_size=sizes["group_size"], max_steps=sizes["max_steps"], prompt=prompt, seed=0, progress=False, sampling=SamplingConfig(max_length=args.max_length))
    modes = {
        "naive": (run_engine, RolloutConfig(**base, max_parallel=1)),
        "batched": (run_engine, RolloutConfig(**base, max_parallel=args.parallel)),
        "multiturn": (run_engine, RolloutConfig(**base, max_parallel=args.parallel, layout="multiturn")),
    }
    if args.hf_generate:
        modes["hf-generate"] = (run_hf_generate, RolloutConfig(**base))
    with inference_policy(policy, merge_lora=args.lora != "unmerged", dtype="float32") as actor:
        shape = ModelShape.of(actor.model)
        for layout in ("stepwise", "multiturn"):  # warm-up
            run_engine(actor, tasks[:1], RolloutConfig(**{**base, "group_size": 1, "max_steps": 2, "layout": layout}))
        results: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
        for round_index in range(sizes["rounds"]):
            for mode, (run, config) in modes.items():
                stats = timed(run, actor, tasks, config, shape)
                results[mode].append(stats)
                print(
                    f"round {round_index + 1} {mode:>11}: {stats['steps']:.0f} env steps in {stats['wall']:.1f} s -> "
                    f"{stats['steps_per_s']:.2f} env steps/s, {stats['tokens_per_s']:.1f} tokens/s (cpu {stats['cpu']:.2f})"
                )
    report(results, peaks)


def report(results: dict[str, list[dict[str, float]]], peaks: dict[str, float]) -> None:
    """Medians per mode, the model-FLOP fractions of the peak, and the ratios between modes."""

    def median(mode: str, key: str) -> float:
        return statistics.median(stats[key] for stats in results[mode])

    print("medians:")
    for mode in results:
        print(
            f"  {mode:>11}: {median(mode, 'steps_per_s'):.2f} env steps/s, {median(mode, 'tokens_per_s'):.1f} generated tokens/s, "
            f"{median(mode, 'steps_per_cpu_s'):.2f} env steps per CPU second of this process"
        )
    for mode, runs in results.items():
        last = runs[-1]
        if "context" in last:
            print(
                f"  {mode:>11}: context per step {last['context']:.0f} tokens, {last['reprefills']:.0f} truncated re-reads; "
                f"last round {last['generation_seconds']:.1f} s generating, {last['env_seconds']:.1f} s in the environment"
            )
    print("model FLOPs (2 N P + 4 w L C + 2 V h G) over the measured matmul peak:")
    for mode in results:
        fractions = ", ".join(f"{median(mode, 'flops_per_s') / peak:.2%} of the {dtype} peak" for dtype, peak in peaks.items())
        in_generation = ""
        if "generation_flops_per_s" in results[mode][0]:
            in_generation = f" ({median(mode, 'generation_flops_per_s') / peaks['fp32']:.2%} of fp32 over generation seconds only)"
        print(
            f"  {mode:>11}: {median(mode, 'flops_per_step') / 1e9:.2f} GFLOP per env step, {median(mode, 'positions_per_step'):.0f} "
            f"positions fed per step ({median(mode, 'padding'):.0%} more as padding); {median(mode, 'flops_per_s') / 1e9:.2f} GFLOP/s "
            f"= {fractions}{in_generation}"
        )
    for mode, baseline in PAIRS + ((("batched", "hf-generate"),) if "hf-generate" in results else ()):
        pairs = list(zip(results[mode], results[baseline]))
        ratios = {key: statistics.median(b[key] / n[key] for b, n in pairs) for key in ("steps_per_s", "tokens_per_s", "steps_per_cpu_s")}
        print(
            f"{mode} / {baseline}: {ratios['steps_per_s']:.2f}x env steps/s, {ratios['tokens_per_s']:.2f}x generated tokens/s, "
            f"{ratios['steps_per_cpu_s']:.2f}x env steps per CPU second (median of per-round ratios)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="small,smollm2-135m", help="comma-separated: small, smollm2-135m (or 135m)")
    parser.add_argument("--policy", action="append", default=[], metavar="DIR", help="also a local HF policy directory")
    parser.add_argument("--lora", choices=("merged", "unmerged", "none"), default="merged", help="the 135M model's adapter")
    parser.add_argument("--tasks", type=int, help="training tasks (seeds); default per policy")
    parser.add_argument("--group-size", type=int, help="episodes per task; default per policy")
    parser.add_argument("--max-steps", type=int, help="steps per episode; default per policy")
    parser.add_argument("--rounds", type=int, help="interleaved repetitions (medians reported); default per policy")
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--gold-episodes", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--hf-generate", action="store_true", help="also time a model.generate loop")
    parser.add_argument("--bf16-peak", action="store_true", help="also measure the bf16 matmul peak (slow without native bf16)")
    parser.add_argument("--peak-sizes", type=int, nargs="+", default=[1024, 2048], help="matrix sizes of the matmul peak (smaller: a quick, lower peak)")
    parser.add_argument("--max-length", type=int, default=2048, help="context + response tokens")
    parser.add_argument("--no-valid-actions", action="store_true", help="leave the valid-action list out of the prompt")
    args = parser.parse_args()
    os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")
    logging.basicConfig(level=logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)
    names = [ALIASES[name] for name in args.models.split(",") if name] + args.policy

    peaks = {"fp32": matmul_peak(torch.float32, args.peak_sizes)}
    if args.bf16_peak:
        peaks["bf16"] = matmul_peak(torch.bfloat16, args.peak_sizes)
    print(f"torch threads {torch.get_num_threads()}; matmul peak " + ", ".join(f"{dtype} {peak / 1e9:.1f} GFLOP/s" for dtype, peak in peaks.items()))
    gold_steps = max(sizes_for(name, args)["max_steps"] for name in names)
    texts = gold_texts(twc_spec(gold_steps), args.gold_episodes, PromptConfig())
    for name in names:
        benchmark(name, texts, args, peaks)


if __name__ == "__main__":
    main()

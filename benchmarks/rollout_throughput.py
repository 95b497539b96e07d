"""Throughput of the batched rollout engine against one episode at a time.

Builds the default "small" policy (~4M parameters at a 2048-token vocabulary, Qwen2
architecture, from a config) with a tokenizer trained on a few gold episodes of
TextWorldExpress twc, then plays the SAME tasks in one process with:

- naive: the engine with one episode at a time (``max_parallel=1``), step-wise layout: one
  prompt per call, re-read whole at every step;
- batched: ``--parallel`` episodes at once (default 32), step-wise layout: one generation
  call per turn;
- multiturn: ``--parallel`` episodes at once in the multi-turn layout: each episode one token
  sequence whose KV cache is kept across turns, only the new observation prefilled;
- hf-generate (``--hf-generate``): the textbook loop, one episode at a time,
  ``model.generate`` with ``prefix_allowed_tokens_fn`` over the same action trie.

All use the same model, decoding (constrained, temperature 0.4), prompts and tasks. The
modes are interleaved over ``--rounds`` rounds and the medians reported, because a shared
machine's load drifts; "cpu" is the process's CPU time over wall time x torch threads
(well below 1.0 means other processes took the cores; "env steps per CPU second" divides by
this process's CPU time instead of the wall clock, the steadier figure on a loaded machine,
though it leaves out the environment's JVM). A benchmark, not a test:

    python benchmarks/rollout_throughput.py                       # ~4 minutes on 2 CPU cores
    python benchmarks/rollout_throughput.py --tasks 4 --group-size 2 --max-steps 10 --rounds 1
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time

import torch

from hindsight.data.expert import play_gold_episode
from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import encode_prompt
from hindsight.policy.model import build_policy, count_parameters
from hindsight.policy.prompts import PromptConfig, episode_prompts
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.rollout import RolloutConfig, make_tasks, run_rollouts
from hindsight.rollout.live_episode import Episode

logger = logging.getLogger(__name__)


def gold_texts(spec: EnvironmentSpec, episodes: int, prompt: PromptConfig) -> list[str]:
    """Prompts and actions of ``episodes`` gold episodes (the tokenizer's training text)."""
    env = make_env(spec)
    texts = []
    try:
        for seed in env.seeds("train", episodes):
            rows = play_gold_episode(env, spec, "train", seed)
            actions = [row["action"] for row in rows]
            prompts = episode_prompts(
                rows[0]["task"], [row["observation"] for row in rows], actions, [row["valid_actions"] for row in rows], prompt
            )
            texts += [text for pair in zip(prompts, actions) for text in pair]
    finally:
        env.close()
    return texts


def run_engine(policy, tasks, config: RolloutConfig) -> tuple[int, int]:
    """Play the tasks with the engine; return (env steps, generated tokens)."""
    stats = run_rollouts(policy, make_env, tasks, config).stats
    CONTEXT[config.layout, config.max_parallel] = (stats["mean_prompt_tokens"], stats["context_reprefills"])
    SECONDS[config.layout, config.max_parallel] = (stats["generation_seconds"], stats["env_seconds"])
    return int(stats["steps"]), int(stats["generated_tokens"])


CONTEXT: dict[tuple[str, int], tuple[float, float]] = {}
"""Per engine mode: (mean context tokens per step, contexts re-read after truncation)."""
SECONDS: dict[tuple[str, int], tuple[float, float]] = {}
"""Per engine mode, its last run: (seconds in generation, seconds in the environment)."""


def run_hf_generate(policy, tasks, config: RolloutConfig) -> tuple[int, int]:
    """The textbook loop: one episode at a time, ``model.generate`` per step restricted by
    ``prefix_allowed_tokens_fn`` to the same action trie (records no log-probs)."""
    model, tokenizer = policy.model, policy.tokenizer
    steps = tokens = 0
    for task in tasks:
        for member in range(config.group_size):
            env = make_env(task.spec)
            episode = Episode(f"hf/{task.group_id}/{member}", task, env, config.max_steps, config.prompt)
            episode.start()
            while not episode.done:
                trie = ActionTrie.from_actions(tokenizer, episode.valid_actions)
                prompt_ids = torch.tensor([encode_prompt(tokenizer, episode.prompt())])
                start = prompt_ids.shape[1]
                with torch.no_grad():
                    output = model.generate(
                        prompt_ids,
                        attention_mask=torch.ones_like(prompt_ids),
                        max_new_tokens=trie.depth,
                        do_sample=True,
                        temperature=config.temperature,
                        top_k=0,
                        prefix_allowed_tokens_fn=lambda _, ids: trie.allowed(ids[start:].tolist()) or [tokenizer.eos_token_id],
                        eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id,
                    )
                response = output[0, start:].tolist()
                action = trie.action_for(response) or tokenizer.decode(response, skip_special_tokens=True)
                episode.play(action, action, source="rollout", policy_version=0)
                steps += 1
                tokens += len(response)
            env.close()
    return steps, tokens


def timed(run, *args) -> dict[str, float]:
    """Run and return env steps/s, generated tokens/s, wall seconds and CPU share."""
    wall_start, cpu_start = time.perf_counter(), time.process_time()
    steps, tokens = run(*args)
    wall, cpu = time.perf_counter() - wall_start, time.process_time() - cpu_start
    return {
        "steps": steps,
        "steps_per_s": steps / wall,
        "tokens_per_s": tokens / wall,
        "wall": wall,
        "cpu": cpu / (wall * torch.get_num_threads()),
        "steps_per_cpu_s": steps / cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--tasks", type=int, default=8, help="training tasks (seeds)")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=15)
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved repetitions (medians reported)")
    parser.add_argument("--gold-episodes", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--hf-generate", action="store_true", help="also time a model.generate loop")
    parser.add_argument("--max-length", type=int, default=2048, help="context + response tokens (the model's 2048)")
    parser.add_argument("--no-valid-actions", action="store_true", help="leave the valid-action list out of the prompt")
    args = parser.parse_args()
    os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")
    logging.basicConfig(level=logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)

    spec = EnvironmentSpec(
        "textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=args.max_steps
    )
    tokenizer = train_tokenizer(gold_texts(spec, args.gold_episodes, PromptConfig()), vocab_size=2048)
    prompt = PromptConfig(show_valid_actions=not args.no_valid_actions)
    policy = build_policy(args.preset, tokenizer, seed=0, device="cpu")
    probe = make_env(spec)
    tasks = make_tasks(spec, "train", probe.seeds("train", args.tasks, offset=100))
    probe.close()
    print(
        f"policy: {args.preset} ({count_parameters(policy.model) / 1e6:.2f}M parameters, vocab {len(tokenizer)}), "
        f"torch threads {torch.get_num_threads()}, {len(tasks)} tasks x {args.group_size} episodes, "
        f"max {args.max_steps} steps, {args.rounds} rounds"
    )

    base = RolloutConfig(
        group_size=args.group_size, max_steps=args.max_steps, prompt=prompt, seed=0, progress=False, max_length=args.max_length
    )
    modes = {
        "naive": (run_engine, policy, tasks, RolloutConfig(**{**base.__dict__, "max_parallel": 1})),
        "batched": (run_engine, policy, tasks, RolloutConfig(**{**base.__dict__, "max_parallel": args.parallel})),
        "multiturn": (
            run_engine, policy, tasks, RolloutConfig(**{**base.__dict__, "max_parallel": args.parallel, "layout": "multiturn"})
        ),
    }
    if args.hf_generate:
        modes["hf-generate"] = (run_hf_generate, policy, tasks, base)
    for layout in ("stepwise", "multiturn"):  # warm-up
        run_engine(policy, tasks[:1], RolloutConfig(**{**base.__dict__, "group_size": 1, "max_steps": 2, "layout": layout}))

    results: dict[str, list[dict[str, float]]] = {name: [] for name in modes}
    for round_index in range(args.rounds):
        for name, (run, *run_args) in modes.items():
            stats = timed(run, *run_args)
            results[name].append(stats)
            print(
                f"round {round_index + 1} {name:>11}: {stats['steps']} env steps in {stats['wall']:.1f} s -> "
                f"{stats['steps_per_s']:.1f} env steps/s, {stats['tokens_per_s']:.0f} tokens/s (cpu {stats['cpu']:.2f})"
            )

    def median(name: str, key: str) -> float:
        return statistics.median(stats[key] for stats in results[name])

    print("medians:")
    for name in modes:
        print(
            f"  {name:>11}: {median(name, 'steps_per_s'):.1f} env steps/s, {median(name, 'tokens_per_s'):.0f} generated tokens/s, "
            f"{median(name, 'steps_per_cpu_s'):.1f} env steps per CPU second of this process"
        )
    for (layout, parallel), (context, reprefills) in CONTEXT.items():
        if parallel > 1 or layout == "stepwise":
            generation, environment = SECONDS[layout, parallel]
            print(
                f"  {layout}, {parallel} live: context per step {context:.0f} tokens, {reprefills:.0f} truncated re-reads; "
                f"last round {generation:.1f} s generating, {environment:.1f} s in the environment"
            )
    for name, baseline in (("batched", "naive"), ("multiturn", "naive"), ("multiturn", "batched")):
        ratios = [b["steps_per_s"] / n["steps_per_s"] for b, n in zip(results[name], results[baseline])]
        token_ratios = [b["tokens_per_s"] / n["tokens_per_s"] for b, n in zip(results[name], results[baseline])]
        cpu_ratios = [b["steps_per_cpu_s"] / n["steps_per_cpu_s"] for b, n in zip(results[name], results[baseline])]
        print(
            f"{name} / {baseline}: {statistics.median(ratios):.2f}x env steps/s, {statistics.median(token_ratios):.2f}x "
            f"generated tokens/s, {statistics.median(cpu_ratios):.2f}x env steps per CPU second (median of per-round ratios)"
        )
    if args.hf_generate:
        hf_ratios = [b["steps_per_s"] / h["steps_per_s"] for b, h in zip(results["batched"], results["hf-generate"])]
        print(f"batched / hf-generate: {statistics.median(hf_ratios):.2f}x env steps/s")


if __name__ == "__main__":
    main()

"""Asynchronous rollouts against the synchronous loop at an equal number of updates.

Builds a policy (``--preset``, Qwen2 architecture from a config) with a tokenizer trained on
gold TextWorldExpress twc episodes, behaviour-clones it briefly on them (so that RL has
non-zero advantages), then trains copies of it with GRPO for ``--updates`` updates:

- sync: today's loop (the learner plays each update's rollout, then trains on it);
- async-k: a rollout worker process plays ahead, at most k versions stale (``--staleness``,
  default 1), decoupled PPO on the stale samples; k = 0 is lock-step (no overlap: it shows
  the cost of the second process alone);
- async-k-rayN: the same with N Ray actors instead of the process (``--ray-workers``,
  ``async_rollouts.engine: ray``), each with one torch thread; the local Ray instance is
  started once before the runs (its start-up is printed apart, not in the runs' times).

Every run uses the same seeds, tasks and settings; the learner and the worker use one torch
thread each (2 cores). Reported per run: wall time, updates/s (and the ratio to sync
measured in the same invocation), mean and max staleness, the summed waits of learner and
worker, and the held-out success of the final policy (greedy, ``--heldout`` test-fold
tasks). On a shared machine the figures drift with the load: ``--rounds`` interleaves the
runs (order reversed every other round) and reports medians, and the learner's CPU time is
printed too. A benchmark, not a test:

    python benchmarks/async_rollouts.py                                   # tiny policy, ~5 min on 2 free cores
    python benchmarks/async_rollouts.py --updates 4 --staleness 0 1 2
    python benchmarks/async_rollouts.py --rounds 2 --mini-groups 1    # EvoCUA's mini-groups: one group a message
    python benchmarks/async_rollouts.py --ray-workers 1 2             # rollout workers as Ray actors
"""

from __future__ import annotations

GROUP = "hardware"
REPRODUCES = (
    "docs/schedulers.md#asynchronous-rollouts-with-bounded-staleness-our-reading-of-evocua-15",
    "docs/scale.md#rollout-workers-on-ray",
)
MEASURED = "51-67 s per run of 4 updates (2 rounds of 3 runs), a shared 2-core AMD EPYC without native bf16"
LAST_RUN = "2026-12-04 (the figures' date in docs/schedulers.md and docs/scale.md)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import copy
import os
import time

import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pandas as pd  # noqa: E402

from hindsight.data.expert import collect_expert_trajectories  # noqa: E402
from hindsight.envs import make_env  # noqa: E402
from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.methods import build_method  # noqa: E402
from hindsight.training.checkpoint import frozen_copy  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.prompts import episode_prompts  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout.engine import RolloutConfig, run_rollouts  # noqa: E402
from hindsight.rollout.tasks import split_tasks  # noqa: E402
from hindsight.training.loop import train_rl  # noqa: E402
from hindsight.training.rl_config import RLConfig  # noqa: E402
from hindsight.training.sft import SFTConfig, train_sft  # noqa: E402
from hindsight.policy.generation import SamplingConfig

SPEC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=8)


def warm_policy(preset: str, gold_episodes: int, bc_steps: int):
    """A policy behaviour-cloned for ``bc_steps`` steps on ``gold_episodes`` gold episodes."""
    expert = collect_expert_trajectories([SPEC], {"train": gold_episodes})
    texts, examples = [], []
    for _, episode in expert.groupby("episode_id"):
        prompts = episode_prompts(
            episode["task"].iloc[0], episode["observation"].tolist(), episode["action"].tolist(), episode["valid_actions"].tolist()
        )
        for prompt, action, valid in zip(prompts, episode["action"], episode["valid_actions"]):
            texts += [prompt, action]
            examples.append({"prompt": prompt, "response": action, "valid_actions": list(valid)})
    policy = build_policy(preset, train_tokenizer(texts, vocab_size=1024), seed=0, device="cpu")
    train_sft(policy, pd.DataFrame(examples), SFTConfig(learning_rate=3e-3, weight_decay=0.0, batch_size=8, max_steps=bc_steps, max_length=768))
    return policy


def heldout_success(policy, count: int) -> float:
    """Greedy success rate on ``count`` test-fold twc tasks."""
    settings = RolloutConfig(sampling=SamplingConfig(temperature=0.0, max_length=768), group_size=1, progress=False)
    return float(run_rollouts(policy, make_env, split_tasks(SPEC, "test", count), settings).stats["success_rate"])


def one_run(policy, tasks, config: RLConfig, heldout: int) -> dict:
    rollout = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=768), max_parallel=16, progress=False)
    cpu, started = time.process_time(), time.perf_counter()
    result = train_rl(copy.deepcopy(policy), frozen_copy(policy.model), tasks, make_env, rollout, config, build_method(config), seed=11)
    wall = time.perf_counter() - started
    history = result.history
    figures = {
        "wall_s": wall,
        "updates_per_s": config.updates / wall,
        "learner_cpu_s": time.process_time() - cpu,
        "train_success": float(history["rollout/success_rate"].mean()),
        "heldout_success": heldout_success(result.policy, heldout),
    }
    if config.schedulers.async_rollouts.enabled:
        figures.update(
            staleness_mean=float(history["async/staleness_mean"].mean()),
            staleness_max=float(history["async/staleness_max"].max()),
            learner_wait_s=float(history["async/learner_wait_seconds"].sum()),
            worker_wait_s=float(history["async/worker_wait_seconds"].sum()),
            mini_groups_per_update=float(history["async/mini_groups_per_update"].mean()),
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--updates", type=int, default=6)
    parser.add_argument("--tasks-per-update", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--ppo-epochs", type=int, default=2)
    parser.add_argument("--staleness", type=int, nargs="+", default=[1])
    parser.add_argument("--heldout", type=int, default=16)
    parser.add_argument("--gold-episodes", type=int, default=8)
    parser.add_argument("--bc-steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--mini-groups", type=int, nargs="*", default=[], help="also async-k with N whole groups per worker message")
    parser.add_argument("--ray-workers", type=int, nargs="*", default=[], help="also async-k with N Ray actors (engine: ray)")
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = warm_policy(args.preset, args.gold_episodes, args.bc_steps)
    tasks = split_tasks(SPEC, "train", 16)
    base = dict(
        algorithm="grpo", updates=args.updates, tasks_per_update=args.tasks_per_update, group_size=args.group_size,
        ppo_epochs=args.ppo_epochs, learning_rate=1e-3, mini_batch_size=32,
    )

    def asynchronous(**settings) -> dict:
        return {"schedulers": {"async_rollouts": {"enabled": True, "worker_threads": 1, **settings}}}

    print(f"start policy: held-out greedy success {heldout_success(policy, args.heldout):.3f} on {args.heldout} test tasks")
    runs = {"sync": RLConfig(**base)}
    runs.update({f"async-{k}": RLConfig(**base, **asynchronous(max_staleness=k)) for k in args.staleness})
    runs.update({
        f"async-{k}-mini{n}": RLConfig(**base, **asynchronous(max_staleness=k, mini_groups=n))
        for k in args.staleness for n in args.mini_groups
    })
    runs.update({
        f"async-{k}-ray{n}": RLConfig(**base, **asynchronous(max_staleness=k, engine="ray", workers=n))
        for k in args.staleness for n in args.ray_workers
    })
    if args.ray_workers:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        import ray

        started = time.perf_counter()
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
        print(f"local Ray instance started in {time.perf_counter() - started:.1f} s ({os.cpu_count()} CPUs)")
    rows = []
    for round_index in range(args.rounds):  # interleaved rounds (the load drifts), order reversed every other round
        for name, config in (list(runs.items()) if round_index % 2 == 0 else list(runs.items())[::-1]):
            rows.append({"run": name, **one_run(policy, tasks, config, args.heldout)})
            print(round_index, {key: (round(v, 3) if isinstance(v, float) else v) for key, v in rows[-1].items()}, flush=True)
    table = pd.DataFrame(rows).groupby("run", sort=False).median()  # medians over the rounds
    table["speedup_vs_sync"] = table["updates_per_s"] / table.loc["sync", "updates_per_s"]
    print(f"\n{args.updates} GRPO updates, {args.tasks_per_update} tasks x {args.group_size} episodes each, {args.preset} policy, "
          f"{os.cpu_count()} CPUs, 1 torch thread per process, load average {os.getloadavg()[0]:.1f}, medians of {args.rounds} round(s)")
    print(table.round(3).to_string())
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "unknown CPU")
    print(f"CPU: {cpu}")


if __name__ == "__main__":
    main()

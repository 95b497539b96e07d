"""STEPO, the curriculum and the ODYSSE sampler against the plain GRPO loop at equal budget
(docs/schedulers.md): held-out success, training success, environment steps and wall time.

One warm start for every method: a tiny policy behaviour-cloned on gold twc episodes (so
that it wins some episodes and groups have signal). Each method (``grpo``,
``grpo_stepo``, ``grpo_curriculum``, ``grpo_odysse``, ``grpo_espo`` from ``experiments.methods``) then
runs ``--updates`` RL updates of ``--tasks`` x ``--group`` episodes from that start with
the same seed, and is evaluated on the same held-out "seen" tasks (train-fold seeds never
trained on, one sampled episode each). The budget is equal in updates and in tasks drawn
per update; STEPO's refill rounds play more episodes, so its environment steps are
printed next to the others'. Figures vs ``grpo`` are from the same run. Not a test.

Run from the project root, one thread (a few minutes per method and seed on 2 cores):

    python benchmarks/schedulers.py
    python benchmarks/schedulers.py --seeds 0 1 --updates 8 --heldout 40
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/schedulers.md#which-tasks-which-samples-stepo-a-curriculum-the-odysse-sampler",)
MEASURED = (
    "run time not given (the docstring: a few minutes per method and seed on 2 cores); a shared 2-core "
    "AMD EPYC without native bf16"
)
LAST_RUN = "2026-12-04 (the figure's date in docs/schedulers.md)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import copy
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from hindsight.config import ProjectConfig  # noqa: E402
from hindsight.data.expert import collect_expert_trajectories  # noqa: E402
from hindsight.envs import make_env  # noqa: E402
from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.evaluation.heldout import HeldoutConfig, HeldoutPlay, evaluate_agents  # noqa: E402
from hindsight.evaluation.metrics import success_summary  # noqa: E402
from hindsight.experiments.grid import Cell, cell_rl_config  # noqa: E402
from hindsight.methods import build_method  # noqa: E402
from hindsight.training.checkpoint import frozen_copy  # noqa: E402
from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout.tasks import make_tasks  # noqa: E402
from hindsight.training.loop import train_rl  # noqa: E402
from hindsight.training.rl_config import RLConfig  # noqa: E402
from hindsight.training.sft import SFTConfig, train_sft  # noqa: E402

SPEC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=10)
METHOD_NAMES = ["grpo", "grpo_stepo", "grpo_curriculum", "grpo_odysse", "grpo_espo"]
MECHANISM_FIGURES = {
    "stepo/dropped_groups": "sum", "stepo/extra_rounds": "sum",
    "curriculum/infeasible_drawn": "sum", "curriculum/hard_success_drawn": "sum", "curriculum/replayed_successes": "sum",
    "curriculum/infeasible_declared_rate": "mean", "curriculum/feasible_declared_rate": "mean",
    "espo/episode_clipfrac": "mean", "espo/ratio_max": "max", "espo/episodes_per_minibatch": "mean",
}
"""Per-run figures that show each scheduler's mechanism ran (summed or averaged over updates)."""


def warm_start(gold_episodes: int, bc_steps: int, project: ProjectConfig):
    """A tiny policy behaviour-cloned on ``gold_episodes`` gold twc episodes."""
    expert = collect_expert_trajectories([SPEC], {"train": gold_episodes})
    examples = behaviour_cloning_examples(expert, project)
    tokenizer = train_tokenizer(examples["prompt"].tolist() + examples["response"].tolist(), vocab_size=2048)
    policy = build_policy("tiny", tokenizer, seed=0, device="cpu")
    config = SFTConfig(learning_rate=3e-3, weight_decay=0.0, batch_size=8, max_steps=bc_steps, warmup_ratio=0.1, max_length=768, log_every=50)
    train_sft(policy, examples[["prompt", "response"]], config)
    return policy


def heldout_success(policy, rollout, heldout: HeldoutConfig) -> float:
    steps = evaluate_agents(policy, [SPEC], make_env, rollout, heldout, include_random=False)
    return float(success_summary(steps)["success_rate"].iloc[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=METHOD_NAMES)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--updates", type=int, default=6)
    parser.add_argument("--tasks", type=int, default=4, help="tasks per update")
    parser.add_argument("--group", type=int, default=4, help="episodes per task")
    parser.add_argument("--pool", type=int, default=32, help="training tasks (train-fold seeds from the 20th on)")
    parser.add_argument("--heldout", type=int, default=30, help="held-out 'seen' tasks")
    parser.add_argument("--gold", type=int, default=20, help="gold episodes for behaviour cloning")
    parser.add_argument("--bc-steps", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    project = ProjectConfig()
    rollout = dataclasses.replace(project.rollout_config(sampling={"temperature": 1.0}), max_parallel=16, progress=False)
    heldout = HeldoutConfig(play=HeldoutPlay(episodes_per_game=args.heldout, splits=["seen"], decodings={"sampled": {"temperature": 0.4}}), seen_seed_offset=500)
    started = time.perf_counter()
    start = warm_start(args.gold, args.bc_steps, project)
    pool = make_tasks(SPEC, "train", range(args.gold, args.gold + args.pool))
    start_success = heldout_success(start, rollout, heldout)
    print(f"warm start: {time.perf_counter() - started:.0f} s, held-out seen success {start_success:.3f} ({args.heldout} tasks)")
    base = RLConfig(
        algorithm="grpo", updates=args.updates, tasks_per_update=args.tasks, group_size=args.group,
        learning_rate=1e-3, mini_batch_size=16, kl_coef=0.01, eval_every=0,
    )
    rows = []
    for seed in args.seeds:
        for name in args.methods:
            _, config = cell_rl_config(base, Cell(method=name, seed=seed, fraction=1.0))
            policy = copy.deepcopy(start)
            began = time.perf_counter()
            result = train_rl(policy, frozen_copy(start.model), pool, make_env, rollout, config, build_method(config), seed=seed)
            seconds = time.perf_counter() - began
            history = result.history
            row = {
                "method": name, "seed": seed, "heldout_success": heldout_success(result.policy, rollout, heldout),
                "train_success": float(history["rollout/success_rate"].mean()),
                "env_steps": float(history["charts/env_steps_total"].iloc[-1]), "seconds": seconds,
            }
            for extra, aggregate in MECHANISM_FIGURES.items():
                if extra in history:
                    row[extra] = float(getattr(history[extra], aggregate)())
            rows.append(row)
            print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    table = pd.DataFrame(rows)
    mean = table.groupby("method", sort=False)[["heldout_success", "train_success", "env_steps", "seconds"]].mean()
    plain = mean.loc["grpo"] if "grpo" in mean.index else None
    print(f"\nStart: held-out seen success {start_success:.3f}. Means over seeds {args.seeds}, {args.updates} updates x {args.tasks} tasks x {args.group} episodes:")
    print("| method | held-out seen success | training success | env steps | wall s | env steps / grpo | wall / grpo |")
    print("|---|---|---|---|---|---|---|")
    for name, row in mean.iterrows():
        ratio_steps = row["env_steps"] / plain["env_steps"] if plain is not None else float("nan")
        ratio_time = row["seconds"] / plain["seconds"] if plain is not None else float("nan")
        print(f"| {name} | {row['heldout_success']:.3f} | {row['train_success']:.3f} | {row['env_steps']:.0f} | {row['seconds']:.0f} | {ratio_steps:.2f} | {ratio_time:.2f} |")
    if len(args.seeds) > 1:
        spread = table.groupby("method", sort=False)["heldout_success"].agg(lambda v: statistics.pstdev(v))
        print("held-out success spread over seeds (population std):", spread.round(3).to_dict())
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

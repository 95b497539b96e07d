"""EMPO vs online GRPO on TextWorldExpress at equal update budgets (prints figures).

1. Expert (gold) episodes of the train fold are collected and a fresh policy of the
   project's preset is behaviour-cloned on them: the one starting checkpoint of both runs.
2. Online GRPO trains on the first ``--tasks-per-game`` train-fold tasks in the real
   environment. EMPO trains on the gold episodes of the same tasks, replayed as the
   environment (``envs.expert_replay``: match -> next expert state, mismatch -> Patch
   Module, ``patch_threshold`` 2): it never steps the simulator while training; the
   environment steps it used are the ones that recorded those gold episodes, once.
   Both run ``--updates`` updates of ``--tasks-per-update`` tasks x ``--group-size``
   rollouts, with the same RL settings otherwise (``conf/base`` training.rl).
3. Every ``--eval-every`` updates (and at the start) each checkpoint is scored twice on the
   same held-out tasks (train-fold seeds from ``environment.seen_seed_offset``, never trained
   on): online success in the real environment (T=1) and semi-online success and progress
   on those tasks' gold episodes (stop at the first mismatch; ``evaluation.semi_online``).
4. Printed: per checkpoint the three figures and the environment steps used so far, and the
   Pearson correlation over all checkpoints of both runs (the start counted once) between
   semi-online and online success, the paper's claim.

Run from the project root (one torch job at a time). Measured with the defaults below, one
torch thread, on a 2-core machine shared with five other jobs (load ~12): 35 minutes wall,
of it behaviour cloning 424 s, GRPO 1134 s, EMPO 417 s (each with its held-out evaluations).
There GRPO went 29.2 -> 29.2% online held-out success over 6 updates (1594 env steps), EMPO
29.2 -> 20.8% (324 env steps, the gold episodes, recorded once; 410 replayed steps, match
rate 0.42, patch rate 0.41 at the last update); semi-online success was 0% and progress 2.0%
at every checkpoint: TextWorldExpress gold paths start with "look around", which the
behaviour-cloned policy rarely chooses first, so semi-online play stops at step 0 almost
always and the correlation over checkpoints is undefined (constant semi-online success).

    python benchmarks/empo_vs_grpo.py --threads 1
    python benchmarks/empo_vs_grpo.py --updates 8 --heldout 20 --bc-steps 400
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/transition_sources.md#empo-expert-trajectories-as-the-environment-kedro-run---pipeline-empo",)
MEASURED = "about 35 min on 2 shared cores (CPU not named)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/transition_sources.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from behaviour_cloning_settings import ENV_HELP, benchmark_settings  # noqa: E402
from empo_start import empo_start  # noqa: E402


def pearson(xs: list[float], ys: list[float]) -> float:
    """Pearson correlation (nan when either side is constant)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return sxy / (sx * sy) if sx > 0 and sy > 0 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    parser.add_argument("--expert-episodes", type=int, default=40, help="gold episodes per game for behaviour cloning")
    parser.add_argument("--bc-steps", type=int, default=200, help="behaviour-cloning steps")
    parser.add_argument("--tasks-per-game", type=int, default=20, help="RL training tasks per game")
    parser.add_argument("--updates", type=int, default=6)
    parser.add_argument("--tasks-per-update", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--eval-every", type=int, default=2)
    parser.add_argument("--heldout", type=int, default=12, help="held-out tasks per game")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: HINDSIGHT_TORCH_THREADS or all)")
    parser.add_argument("--env", default="local", help=ENV_HELP)
    args = parser.parse_args()

    from hindsight.config import EmpoConfig
    from hindsight.runs.empo_run import empo_grid_setup

    base = {
        "ingestion": {"expert_episodes": {"train": args.expert_episodes, "dev": 0, "test": 0}},
        "behaviour_cloning": {"sft": {"max_steps": args.bc_steps}},
    }
    settings = benchmark_settings(args.set, args.threads, base=base, env=args.env)
    project, training = settings["project"], settings["training"]
    training = dataclasses.replace(
        training,
        tasks_per_game=args.tasks_per_game,
        heldout=dataclasses.replace(training.heldout, episodes_per_game=args.heldout, splits=["seen"], decodings={"sampled": {"temperature": 1.0}}),
    )
    start = empo_start(settings, training)
    policy, setup, evaluate, semi_online_set = start.policy, start.setup, start.evaluate, start.semi_online_set

    rl = dataclasses.replace(
        training.rl, updates=args.updates, tasks_per_update=args.tasks_per_update, group_size=args.group_size,
        eval_every=args.eval_every, checkpoint_every=args.updates,
    )
    start_metrics = evaluate(policy, 0)
    rows = [{"method": "start", "update": 0, "env_steps": 0.0, **start_metrics}]
    timings = {}
    for method in ("grpo", "empo"):
        tick = time.perf_counter()
        config = dataclasses.replace(rl, algorithm=method)
        run_setup, recorded = (setup, 0) if method == "grpo" else empo_grid_setup(setup, EmpoConfig(), project.seeds.rollouts)
        result = _train(policy, config, run_setup, evaluate, project.seeds.rollouts)
        for record in result.history.to_dict("records"):
            if "semi_online/success_rate" not in record or record["semi_online/success_rate"] != record["semi_online/success_rate"]:
                continue
            env_steps = record["charts/env_steps_total"] if method == "grpo" else float(recorded)
            rows.append({"method": method, "update": int(record["update"]), "env_steps": env_steps, **record,
                         "replay_steps": record["charts/env_steps_total"] if method == "empo" else 0.0})
        timings[method] = time.perf_counter() - tick

    print(f"settings: {' '.join(args.set) or '(project parameters)'}; games {[s.game for s in setup.specs]}; "
          f"preset {settings['behaviour_cloning'].policy.preset}; {args.expert_episodes} expert episodes/game, "
          f"{args.bc_steps} BC steps ({start.cloning_seconds:.0f} s); {args.updates} updates x {args.tasks_per_update} tasks x "
          f"{args.group_size} rollouts; {args.heldout} held-out tasks/game ({len(semi_online_set.by_split['test'])} gold episodes)")
    print(f"seconds: grpo {timings['grpo']:.0f}, empo {timings['empo']:.0f}")
    print(f"{'method':<6} {'update':>6} {'env steps':>9} {'online %':>8} {'semi-online %':>13} {'progress %':>10}")
    for row in rows:
        print(f"{row['method']:<6} {row['update']:>6} {row['env_steps']:>9.0f} {100 * row['eval/seen/all/success_rate']:>8.1f} "
              f"{100 * row['semi_online/success_rate']:>13.1f} {100 * row['semi_online/mean_progress']:>10.1f}")
    online_success = [row["eval/seen/all/success_rate"] for row in rows]
    print(f"correlation over {len(rows)} checkpoints: online vs semi-online success "
          f"{pearson(online_success, [row['semi_online/success_rate'] for row in rows]):+.3f}; "
          f"online success vs semi-online progress {pearson(online_success, [row['semi_online/mean_progress'] for row in rows]):+.3f}")
    empo_rows = [row for row in rows if row["method"] == "empo"]
    if empo_rows:
        last = empo_rows[-1]
        print(f"EMPO mechanism, last update: match rate {last.get('empo/match_rate', float('nan')):.3f}, "
              f"patch rate {last.get('empo/patch_rate', float('nan')):.3f}, replayed steps {last['replay_steps']:.0f} (no simulator)")


def _train(policy, config, setup, evaluate, seed):
    """``train_rl`` on a private copy of the start, evaluated by the benchmark's two-way ``evaluate``."""
    import copy

    from hindsight.envs import make_env
    from hindsight.methods import build_method
    from hindsight.training.checkpoint import frozen_copy
    from hindsight.training.loop import train_rl

    trained = copy.deepcopy(policy)
    return train_rl(
        trained, frozen_copy(policy.model), setup.pool, setup.env_factory or make_env, setup.rollout, config,
        build_method(config), seed=seed, evaluate=evaluate,
    )


if __name__ == "__main__":
    main()

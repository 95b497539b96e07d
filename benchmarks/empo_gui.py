"""EMPO on GUI expert trajectories vs GRPO in the live browser vs behaviour cloning alone,
on MiniWoB++ web tasks at equal update budgets (prints figures; docs/gui.md, "EMPO on web
tasks").

1. Gold episodes of the train fold are played once in Chromium (GUI trajectories: a page
   view per step) and a fresh policy is behaviour-cloned on them: the one start of both runs
   and the "behaviour cloning alone" agent.
2. GRPO trains on the first ``--tasks-per-game`` train-fold tasks in the live browser. EMPO
   trains on the gold episodes of the same tasks replayed as the environment
   (``envs.expert_replay`` with the GUI action match of ``envs.miniwob.action_match``:
   match -> the expert's next screen, mismatch -> the Patch Module): no browser while it
   trains. Both run ``--updates`` updates of ``--tasks-per-update`` tasks x
   ``--group-size`` rollouts with the same RL settings (``conf/miniwob`` training.rl).
3. At the start (behaviour cloning alone) and every ``--eval-every`` updates each checkpoint
   plays the same held-out tasks (train-fold seeds from the seen offset, never trained on)
   ``--trials`` times in the live browser, and semi-online on their gold episodes.
4. Printed: per checkpoint online success, semi-online success and progress, environment
   steps; then pass^1..trials by task type for behaviour cloning, GRPO and EMPO after the
   last update; EMPO's match and patch rates.

Settings: ``conf/miniwob`` over ``conf/base`` (``--env``), the arguments below on top. Run
from the project root, one torch job at a time:

    python benchmarks/empo_gui.py --threads 1
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/gui.md#empo-stepo-and-the-curriculum-on-web-tasks",)
MEASURED = "7 min 3 s wall (5 min 36 s CPU), one torch thread, a shared 2-core AMD EPYC"
LAST_RUN = "2026-12-06 (the figure's date in docs/gui.md)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import copy
import dataclasses
import os
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from behaviour_cloning_settings import benchmark_settings  # noqa: E402
from empo_start import empo_start  # noqa: E402
from empo_vs_grpo import _train, pearson  # noqa: E402


def environment_parameters(env: str) -> dict:
    """The parameters of ``conf/<env>`` over ``conf/base``, as Kedro reads them (each
    top-level block of the environment replaces the base block whole): the blocks only."""
    from kedro.config import OmegaConfigLoader

    loader = OmegaConfigLoader(conf_source=str(PROJECT_ROOT / "conf"), base_env="base", default_run_env=env)
    return {key: copy.deepcopy(value) for key, value in loader["parameters"].items() if isinstance(value, dict)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="miniwob", help="configuration environment over conf/base")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    parser.add_argument("--expert-episodes", type=int, default=30, help="gold episodes per task type for behaviour cloning")
    parser.add_argument("--bc-steps", type=int, default=300, help="behaviour-cloning steps")
    parser.add_argument("--tasks-per-game", type=int, default=10, help="RL training tasks per task type")
    parser.add_argument("--updates", type=int, default=4)
    parser.add_argument("--tasks-per-update", type=int, default=8)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--eval-every", type=int, default=4)
    parser.add_argument("--heldout", type=int, default=4, help="held-out tasks per task type")
    parser.add_argument("--trials", type=int, default=3, help="plays of each held-out task (pass^1..trials)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: HINDSIGHT_TORCH_THREADS or all)")
    args = parser.parse_args()

    from hindsight.config import EmpoConfig
    from hindsight.runs.empo_run import empo_grid_setup

    base = environment_parameters(args.env)
    base["ingestion"] = {**base.get("ingestion", {}), "expert_episodes": {"train": args.expert_episodes, "dev": 0, "test": 0}}
    cloning = base.get("behaviour_cloning", {})
    base["behaviour_cloning"] = {**cloning, "sft": {**cloning.get("sft", {}), "max_steps": args.bc_steps}}
    settings = benchmark_settings(args.set, args.threads, base=base)
    project, training = settings["project"], settings["training"]
    training = dataclasses.replace(
        training, tasks_per_game=args.tasks_per_game,
        heldout=dataclasses.replace(training.heldout, episodes_per_game=args.heldout, splits=["seen"], trials_per_task=args.trials),
    )
    start = empo_start(settings, training)
    policy, setup, evaluate, semi_online_set = start.policy, start.setup, start.evaluate, start.semi_online_set
    gui = sum(t.gui for t in semi_online_set.by_split["test"])

    rl = dataclasses.replace(
        training.rl, updates=args.updates, tasks_per_update=args.tasks_per_update, group_size=args.group_size,
        eval_every=args.eval_every, checkpoint_every=args.updates,
    )
    tick = time.perf_counter()
    rows = [{"method": "start", "update": 0, "env_steps": 0.0, **evaluate(policy, 0)}]
    timings = {"start evaluation": time.perf_counter() - tick}
    for method in ("grpo", "empo"):
        tick = time.perf_counter()
        config = dataclasses.replace(rl, algorithm=method)
        run_setup, recorded = (setup, 0) if method == "grpo" else empo_grid_setup(setup, EmpoConfig(), project.seeds.rollouts)
        result = _train(policy, config, run_setup, evaluate, project.seeds.rollouts)
        for record in result.history.to_dict("records"):
            if record.get("semi_online/success_rate") != record.get("semi_online/success_rate") or "semi_online/success_rate" not in record:
                continue
            env_steps = record["charts/env_steps_total"] if method == "grpo" else float(recorded)
            rows.append({**record, "method": method, "update": int(record["update"]), "env_steps": env_steps})
        timings[method] = time.perf_counter() - tick

    games = [spec.game for spec in setup.specs]
    print(f"settings: conf/{args.env} {' '.join(args.set)}; task types {games}; {args.expert_episodes} gold episodes per type, "
          f"{args.bc_steps} BC steps ({start.cloning_seconds:.0f} s with the gold episodes); {args.updates} updates x "
          f"{args.tasks_per_update} tasks x {args.group_size} rollouts; {args.heldout} held-out tasks per type x {args.trials} "
          f"plays; {len(semi_online_set.by_split['test'])} held-out gold episodes ({gui} read as GUI trajectories)")
    print("seconds: " + ", ".join(f"{name} {value:.0f}" for name, value in timings.items()))
    print(f"{'method':<6} {'update':>6} {'env steps':>9} {'online %':>8} {'semi-online %':>13} {'progress %':>10}")
    for row in rows:
        print(f"{row['method']:<6} {row['update']:>6} {row['env_steps']:>9.0f} {100 * row['eval/seen/all/success_rate']:>8.1f} "
              f"{100 * row['semi_online/success_rate']:>13.1f} {100 * row['semi_online/mean_progress']:>10.1f}")
    online_success = [row["eval/seen/all/success_rate"] for row in rows]
    print(f"correlation over {len(rows)} checkpoints, online vs semi-online success: "
          f"{pearson(online_success, [row['semi_online/success_rate'] for row in rows]):+.3f}")
    last = {row["method"]: row for row in rows}
    labels = {"start": "bc alone", "grpo": f"grpo u{last['grpo']['update']}", "empo": f"empo u{last['empo']['update']}"}
    types = sorted({key.split("/")[2] for key in last["start"] if key.startswith("eval/seen/") and "/pass_hat_" in key})
    print(f"held-out pass^k by task type, live browser (seen seeds, {args.trials} plays per task):")
    print(f"{'agent':<10} {'task type':<22}" + "".join(f" {'pass^' + str(k):>7}" for k in range(1, args.trials + 1)))
    for method in ("start", "grpo", "empo"):
        for task_type in types:
            values = [last[method].get(f"eval/seen/{task_type}/pass_hat_{k}", float("nan")) for k in range(1, args.trials + 1)]
            print(f"{labels[method]:<10} {task_type:<22}" + "".join(f" {100 * v:>7.1f}" for v in values))
    empo = last["empo"]
    print(f"EMPO mechanism, last update: match rate {empo.get('empo/match_rate', float('nan')):.3f}, "
          f"patch rate {empo.get('empo/patch_rate', float('nan')):.3f}, replayed steps {empo.get('charts/env_steps_total', 0):.0f} "
          f"(no browser while training; {empo['env_steps']:.0f} browser steps recorded the gold episodes once)")


if __name__ == "__main__":
    main()

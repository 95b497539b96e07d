"""Seconds per RL update, by phase: what a 100-update run costs, and where it goes.

Runs ``kedro run --pipeline training`` (on the newest Stage-1 checkpoint of the catalog: run
the default ``kedro run`` first) once per configuration given, each in a fresh checkpoint
directory, and reads the phase timings every RL update logs (``time/*`` in the run's
history, ``training.phase_timing.phase_seconds``):

- rollout: the update's episodes (generation and environment steps);
- signals: the method's signals and advantages (SEED: its skills and the re-scoring);
- prepare: the batch's preparation for the update (asynchronous and backend corrections);
- update: the reference log-probs and the PPO epochs (forward, backward, optimizer);
- eval: the held-out points (``training.rl.eval_every``), per point.

It prints, per configuration, the median and mean seconds of each phase per update, the
held-out point's seconds, the projected wall time of ``--project-updates`` updates with a
held-out point every ``--project-eval-every`` (the issue's budget: 100 updates, a point every
10 and at the start), and the ratio of each configuration's update to the first one's, on
the CPU it names. One torch job: run it on idle cores.

    python benchmarks/rl_update_cost.py                                   # GRPO, the default settings
    python benchmarks/rl_update_cost.py --updates 4 \\
        --config "training.rl.algorithm=grpo" \\
        --config "training.rl.algorithm=grpo,rollout.layout=multiturn"    # two configurations, one ratio
"""

from __future__ import annotations

GROUP = "run-time"
REPRODUCES = ("docs/learning.md#what-an-update-costs",)
MEASURED = (
    "a few updates per configuration; per update 12.1-39.8 s (medians) on an Intel Xeon with AMX (native "
    "bf16), one core each"
)
LAST_RUN = "by 2026-12-07 (git: the figure's lines in docs/learning.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from profile_run import cpu_model

PHASES = ("rollout", "signals", "prepare", "update")
HISTORY = Path("data/07_model_output/training_history.parquet")


def newest_history(after: float) -> pd.DataFrame:
    """The training history the run just wrote (the newest version of the versioned dataset)."""
    versions = sorted((p for p in HISTORY.glob("*/training_history.parquet") if p.stat().st_mtime >= after), key=lambda p: p.stat().st_mtime)
    if not versions:
        raise SystemExit(f"no training history written under {HISTORY} by this run (did it fail? see its log above)")
    return pd.read_parquet(versions[-1])


def run_configuration(params: str, updates: int, eval_every: int, env: str | None) -> tuple[pd.DataFrame, float]:
    """One training run of ``updates`` updates with these ``--params``; its history and wall seconds."""
    with tempfile.TemporaryDirectory(prefix="rl_update_cost_") as checkpoints:
        settings = f"training.rl.updates={updates},training.rl.eval_every={eval_every},training.checkpoint_root={checkpoints}"
        command = ["kedro", "run", "--pipeline", "training", "--params", f"{settings},{params}" if params else settings]
        if env:
            command += ["--env", env]
        print("$", " ".join(command), flush=True)
        started = time.time()
        subprocess.run(command, check=True)
        wall = time.time() - started
    return newest_history(started), wall


def phase_table(history: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """(median, mean) seconds of each phase per update; the held-out point's too when any."""
    table = {}
    for phase in PHASES:
        column = f"time/{phase}_s"
        if column in history:
            values = history[column].dropna().tolist()
            table[phase] = (statistics.median(values), statistics.fmean(values))
    if "time/eval_s" in history and history["time/eval_s"].notna().any():
        values = history["time/eval_s"].dropna().tolist()
        table["eval (per point)"] = (statistics.median(values), statistics.fmean(values))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append", help="extra --params of one configuration (repeat to compare; the first is the baseline)")
    parser.add_argument("--updates", type=int, default=4, help="updates per configuration (default 4)")
    parser.add_argument("--eval-every", type=int, default=0, help="a held-out point every N updates during the measured run (0: none)")
    parser.add_argument("--env", default=None, help="kedro configuration environment")
    parser.add_argument("--project-updates", type=int, default=100)
    parser.add_argument("--project-eval-every", type=int, default=10)
    args = parser.parse_args()
    configs = args.config or ["training.rl.algorithm=grpo"]
    rows = []
    for params in configs:
        history, wall = run_configuration(params, args.updates, args.eval_every, args.env)
        rows.append((params, phase_table(history), wall))
    print(f"\nCPU: {cpu_model()}; {args.updates} updates per configuration\n")
    baseline = None
    for params, table, wall in rows:
        per_update = sum(table[p][0] for p in PHASES if p in table)
        baseline = baseline or per_update
        print(f"## {params or '(defaults)'}   (run wall {wall:.0f} s)")
        print("| phase | median s / update | mean s / update |\n|---|---:|---:|")
        for phase, (median, mean) in table.items():
            print(f"| {phase} | {median:.2f} | {mean:.2f} |")
        projected = args.project_updates * per_update
        points = args.project_updates // args.project_eval_every + 1
        if "eval (per point)" in table:
            projected += points * table["eval (per point)"][0]
        print(f"| **one update** | **{per_update:.2f}** | ratio to the first configuration {per_update / baseline:.2f} |")
        print(
            f"\nprojected: {args.project_updates} updates"
            + (f" + {points} held-out points" if "eval (per point)" in table else " (no held-out point measured)")
            + f" = {projected / 60:.1f} min\n"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""Methods against a baseline over seeds, from standalone runs: each method minus the baseline
per (seed, unseen task), pooled over seeds, with the grid's own rule.

Reads the evaluation episode tables that ``kedro run --env learning --pipelines
training,evaluation --params seed=S,training.rl.algorithm=M`` wrote, one run per method and
seed (``data/07_model_output/evaluation_episodes.parquet/<version>/evaluation_episodes.parquet``,
or any copy), each named ``METHOD:SEED=FILE``. Each run's RL policy becomes the cell
``METHOD-SEED`` (``hindsight.experiments.paired.evaluation_outcomes``) and the start policy of
each seed the method ``start``; then ``paired_against`` as the grid's report: every cell at its
decoding picked on seen tasks, the pairs of one seed on the unseen tasks both played, pooled
over seeds, a 95% percentile bootstrap interval over the pairs. Per seed, then pooled.
``--save`` keeps the runs' outcome table (small: one row per held-out task and decoding), so
that the figures reproduce on any machine from the committed table (``--outcomes``).

    python benchmarks/paired_runs.py grpo:6=RUN6/evaluation_episodes.parquet seed:6=... \\
        grpo:7=... seed:7=... --baseline grpo --save results/learning/seed_vs_grpo_outcomes.parquet
    python benchmarks/paired_runs.py --outcomes results/learning/seed_vs_grpo_outcomes.parquet
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/results.md#seed-against-grpo-over-three-seeds", "docs/results.md#seeds-distillation-coefficient-picked-on-seen-tasks-seed-6")
MEASURED = "seconds (it reads one evaluation table per run: 9,600 episodes each at conf/learning)"
LAST_RUN = "2026-12-07 (the figures' date in docs/results.md)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
from pathlib import Path

import pandas as pd

from hindsight.experiments.paired import OUTCOME_COLUMNS, evaluation_outcomes, paired_against, paired_against_markdown


def run_outcomes(specs: list[str]) -> pd.DataFrame:
    """Every run's RL cell, and each seed's start (its first run's Stage-1 episodes)."""
    cells, starts = [], {}
    for spec in specs:
        name, _, path = spec.partition("=")
        method, _, seed = name.partition(":")
        if not (method and seed.isdigit() and path):
            raise SystemExit(f"{spec!r}: give each run as METHOD:SEED=FILE (e.g. grpo:6=evaluation_episodes.parquet)")
        episodes = pd.read_parquet(path)
        try:
            cells.append(evaluation_outcomes(episodes, method, int(seed)))
            starts.setdefault(int(seed), evaluation_outcomes(episodes, "start", int(seed), policy="stage1"))
        except ValueError as error:
            raise SystemExit(f"{path}: {error}") from error
    return pd.concat([*cells, *starts.values()], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="METHOD:SEED=FILE, one per run")
    parser.add_argument("--baseline", default="grpo", help="the method every other is paired against (default grpo)")
    parser.add_argument("--save", type=Path, help="also write the runs' outcome table here (one row per held-out task and decoding)")
    parser.add_argument("--outcomes", type=Path, help="read a table --save wrote instead of the runs (results/learning/)")
    args = parser.parse_args()
    if bool(args.runs) == bool(args.outcomes):
        parser.error("give the runs (METHOD:SEED=FILE ...) or --outcomes FILE, not both")
    outcomes = pd.read_parquet(args.outcomes)[OUTCOME_COLUMNS] if args.outcomes else run_outcomes(args.runs)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        outcomes.to_parquet(args.save, index=False)
        print(f"wrote {args.save}: {len(outcomes)} outcomes of {outcomes['cell'].nunique()} runs and starts")
    for baseline in dict.fromkeys([args.baseline, "start"]):
        compared = outcomes if baseline == "start" else outcomes[outcomes["method"] != "start"]
        per_seed = []
        for seed in sorted(set(compared["seed"])):
            table = paired_against(compared[compared["seed"] == seed], baseline)
            for row in table.itertuples(index=False):
                per_seed.append((row.method, row.mean))
                print(f"seed {seed}: {row.method} minus {baseline}: {100 * row.mean:+.1f} points ({100 * row.low:+.1f} to "
                      f"{100 * row.high:+.1f}), {100 * row.method_success:.1f}% against {100 * row.baseline_success:.1f}%, "
                      f"won only by {row.method} {row.method_only}, only by {baseline} {row.baseline_only}")
        print_between_seeds(per_seed, baseline)
        print()
        print(paired_against_markdown(compared, baseline))


def print_between_seeds(per_seed: list[tuple[str, float]], baseline: str) -> None:
    """Per method, the seeds' own differences side by side: their mean, lowest and highest, and
    on how many seeds the method ended ahead. The pooled interval below resamples tasks, not
    seeds: it does not hold the run-to-run spread of training."""
    for method in dict.fromkeys(method for method, _ in per_seed):
        values = [value for name, value in per_seed if name == method]
        ahead = sum(value > 0 for value in values)
        print(f"between seeds: {method} minus {baseline}: mean {100 * sum(values) / len(values):+.1f} points, from "
              f"{100 * min(values):+.1f} to {100 * max(values):+.1f}; ahead on {ahead} of {len(values)} seeds")


if __name__ == "__main__":
    main()

"""How often a MiniWoB++ dev or test page replays a training page, per seed mapping and task type.

Two measures (``hindsight.envs.miniwob.seeds`` explains why the first decides):

- **Streams** (no browser): seedrandom's generator start for every seed, computed from its
  key (``seeds.fold_overlap``). Equal starts are equal random streams, so equal pages of
  every task type; distinct starts never meet. Per mapping and fold: the seeds compared,
  those repeating an earlier seed of the fold, and those replaying a training seed's stream
  (against the whole training fold). The key names no task, so these counts hold for every
  task type alike.
- **Pages** (``--live N``, Chromium): the first N seeds of each fold of each task type
  played to their first page, which is compared as the policy reads it (the text view:
  instruction, elements, boxes). Counts the dev and test pages equal to one of the N
  training pages, and the training pages equal to an earlier one. Under the default mapping
  these are the chance coincidences of a task with few instances; under ``digits`` they add
  the replayed streams (train 11 = 1, dev 100100 = train 100, test 110110 = train 110).

    python benchmarks/miniwob_page_overlap.py [--sample 10000] [--mappings hindsight digits browsergym]
        [--live 0] [--live-mappings hindsight digits] [--tasks click-test ...]
"""

from __future__ import annotations

GROUP = "environments"
REPRODUCES = ("docs/gui.md#folds-and-seeds",)
MEASURED = "streams: 12 s without a browser; `--live 1000`: not given (CPU not named)"
LAST_RUN = "by 2026-12-07 (git: the figure's lines in docs/gui.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from profile_run import cpu_model  # noqa: E402

from hindsight.envs.miniwob.env import DATA_MODES, FOLDS
from hindsight.envs.miniwob.seeds import SEED_MAPPINGS, FoldOverlap, fold_overlap
from hindsight.envs.miniwob.solvers import SOLVERS

TRAINING_FOLD = "train"


def stream_overlap_table(mappings: list[str], sample: int, training_sample: int | None = None) -> list[str]:
    """Markdown rows: per mapping and fold, the stream repeats (``seeds.fold_overlap``)."""
    rows = [
        "| mapping | fold | seeds compared | repeating an earlier seed of the fold | replaying a training stream | e.g. (seed, training seed) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for mapping in mappings:
        started = time.perf_counter()
        report: list[FoldOverlap] = fold_overlap(FOLDS, mapping, sample=sample, training_fold=TRAINING_FOLD, training_sample=training_sample)
        for row in report:
            replaying = "-" if row.replaying_training is None else f"{row.replaying_training:,}"
            examples = ", ".join(f"({seed}, {training})" for seed, training in row.examples[:3]) or "-"
            rows.append(f"| {mapping} | {row.fold} | {row.seeds:,} | {row.repeated_within:,} | {replaying} | {examples} |")
        print(f"  ({mapping}: {time.perf_counter() - started:.1f} s)")
    return rows


def live_pages(task: str, mapping: str, seeds_per_fold: int) -> dict[str, list[str]]:
    """Fold -> the text views of the first pages of its first ``seeds_per_fold`` seeds."""
    from hindsight.envs.miniwob.page import MiniWobPage
    from hindsight.envs.miniwob.pool import browser_pool
    from hindsight.envs.miniwob.view import render_view

    window = browser_pool().acquire()
    try:
        page = MiniWobPage(window, task, timeout_s=60, seed_mapping=mapping)
        views: dict[str, list[str]] = {}
        for fold, (start, _) in FOLDS.items():
            states = (page.begin(seed, DATA_MODES[fold]) for seed in range(start, start + seeds_per_fold))
            views[fold] = [render_view(state.utterance, state.elements) for state in states]
        return views
    finally:
        window.close()


def page_overlap(views: dict[str, list[str]]) -> dict[str, int]:
    """Per fold, pages equal to a training page (training: to an earlier training page), and
    the training sample's distinct pages (``"distinct training pages"``)."""
    training = views[TRAINING_FOLD]
    known = set(training)
    counts = {"distinct training pages": len(known), TRAINING_FOLD: len(training) - len(known)}
    for fold, fold_views in views.items():
        if fold != TRAINING_FOLD:
            counts[fold] = sum(1 for view in fold_views if view in known)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=10_000, help="held-out seeds compared per fold (streams)")
    parser.add_argument("--training-sample", type=int, default=None, help="training seeds compared against (default: the whole fold)")
    parser.add_argument("--mappings", nargs="+", default=list(SEED_MAPPINGS), choices=list(SEED_MAPPINGS))
    parser.add_argument("--live", type=int, default=0, help="seeds per fold played in Chromium per task type (0: none)")
    parser.add_argument("--live-mappings", nargs="+", default=["hindsight", "digits"], choices=list(SEED_MAPPINGS))
    parser.add_argument("--tasks", nargs="+", default=list(SOLVERS), help="task types played live")
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}, {len(os.sched_getaffinity(0))} cores available")
    folds = ", ".join(f"{fold} {start:,}-{start + size - 1:,}" for fold, (start, size) in FOLDS.items())
    print(f"Folds: {folds}\n")

    against = "the whole training fold" if args.training_sample is None else f"the first {args.training_sample:,} training seeds"
    print(f"Streams (every task type alike), the first {args.sample:,} seeds of each held-out fold against {against}:")
    print("\n".join(stream_overlap_table(args.mappings, args.sample, args.training_sample)))

    if args.live <= 0:
        return
    print(f"\nPages (Chromium), the first {args.live} seeds of each fold, by task type:")
    print("| task type | mapping | distinct of the training pages | training pages repeating an earlier one | dev pages equal to a training page | test pages equal to a training page | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for task in args.tasks:
        for mapping in args.live_mappings:
            started = time.perf_counter()
            counts = page_overlap(live_pages(task, mapping, args.live))
            print(f"| {task} | {mapping} | {counts['distinct training pages']} / {args.live} | {counts[TRAINING_FOLD]} | "
                  f"{counts.get('dev', 0)} | {counts.get('test', 0)} | {time.perf_counter() - started:.0f} |", flush=True)


if __name__ == "__main__":
    main()

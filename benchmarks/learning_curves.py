"""conf/learning's held-out curves over seeds, on one figure: the figure of docs/learning.md.

Reads the training histories that ``kedro run --env learning`` wrote, one per seed
(``data/07_model_output/training_history.parquet/<version>/training_history.parquet``, or
any copy), and draws, per split (seen, unseen) and decoding (greedy, T = 0.4), each seed's
held-out success against the update with its Wilson 95% band (``hindsight.evaluation.curves``).
Labels that share their first word (``--labels "grpo 6" "seed 6" ...``) share a colour: methods
side by side, their seeds in line styles; ``--mean-over-seeds`` draws one line per method, the
seeds' mean, with the seeds' range as its band. ``--level RATE`` also prints the grid's
"episodes to level" table (``hindsight.experiments.sample_efficiency``): per method and seed,
the environment episodes played until the first held-out point at or above RATE, read on the
seen split at T = 0.4 by default (``experiments.success_level``), labels "METHOD SEED".

    python benchmarks/learning_curves.py HISTORY_SEED0 HISTORY_SEED1 HISTORY_SEED2 --out docs/images/learning_curves.png
    python benchmarks/learning_curves.py GRPO6 GRPO7 GRPO8 SEED6 SEED7 SEED8 \
        --labels "grpo 6" "grpo 7" "grpo 8" "seed 6" "seed 7" "seed 8" --mean-over-seeds --out docs/images/seed_vs_grpo_curves.png \
        --level 0.4
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/learning.md#the-first-configuration-4-tasks-x-8-4-epochs-per-seed", "docs/results.md#seed-against-grpo-over-three-seeds",
              "docs/results.md#seeds-distillation-coefficient-picked-on-seen-tasks-seed-6")
MEASURED = "seconds (it reads three histories and draws `docs/images/learning_curves.png`)"
LAST_RUN = "2026-12-07 (git: docs/images/learning_curves.png last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hindsight.config.experiments import SuccessLevel  # noqa: E402
from hindsight.evaluation.curves import curve_points  # noqa: E402
from hindsight.experiments.sample_efficiency import episodes_to_level_markdown  # noqa: E402


STYLES = ("-", "--", ":", "-.")


def line_styles(labels: list[str]) -> list[dict]:
    """Per label: labels that share their first word (a method: "grpo 6", "grpo 7") share a
    colour and differ in line style, when the labels have more than one first word; else
    (the seeds of one method: "seed 0", "seed 1") each its own colour."""
    groups = list(dict.fromkeys(label.split()[0] if label.split() else label for label in labels))
    if len(groups) < 2:
        return [{"color": f"C{index % 10}"} for index in range(len(labels))]
    seen: dict[str, int] = {}
    styles = []
    for label in labels:
        group = label.split()[0] if label.split() else label
        index = seen[group] = seen.get(group, -1) + 1
        styles.append({"color": f"C{groups.index(group) % 10}", "linestyle": STYLES[index % len(STYLES)]})
    return styles


def method_means(points: list[pd.DataFrame], labels: list[str]) -> tuple[list[pd.DataFrame], list[str]]:
    """Per method (the labels' first word): the mean over its seeds of the held-out success at
    each update, its band the seeds' lowest to highest (not an interval: the seeds share the
    held-out tasks); labels "<method> (n seeds)"."""
    methods = list(dict.fromkeys(label.split()[0] for label in labels))
    pooled, names = [], []
    for method in methods:
        parts = [part for part, label in zip(points, labels) if label.split()[0] == method]
        rows = pd.concat(parts).groupby(["split", "decoding", "update"])["success_rate"]
        pooled.append(pd.DataFrame({"success_rate": rows.mean(), "ci_low": rows.min(), "ci_high": rows.max()}).reset_index())
        names.append(f"{method} ({len(parts)} seeds)")
    return pooled, names


def draw(histories: list[pd.DataFrame], labels: list[str], mean_over_seeds: bool = False):
    """One panel per (split, decoding) of the curves, a line and band per history (or per
    method with ``mean_over_seeds``)."""
    points = [curve_points(history) for history in histories]
    if mean_over_seeds:
        points, labels = method_means(points, labels)
    styles = line_styles(labels)
    panels = sorted({(s, d) for p in points for s, d in zip(p["split"], p["decoding"])}, key=lambda key: (key[0] != "unseen", key))
    if not panels:
        raise SystemExit("no held-out points in these histories (training.rl.eval_every was 0)")
    figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for axis, (split, decoding) in zip(axes[0], panels):
        for part, label, style in zip(points, labels, styles):
            rows = part[(part["split"] == split) & (part["decoding"] == decoding)].sort_values("update")
            if rows.empty:
                continue
            line, = axis.plot(rows["update"], 100 * rows["success_rate"], marker="s", markersize=3, label=label, **style)
            axis.fill_between(rows["update"], 100 * rows["ci_low"], 100 * rows["ci_high"], color=line.get_color(), alpha=0.15 if mean_over_seeds else 0.08)
        axis.set_title(f"{split}, {decoding}")
        axis.set_xlabel("update")
        axis.set_ylim(0, 80)
        axis.legend(fontsize=8)
    axes[0][0].set_ylabel("held-out success % " + ("\n(seeds' mean; band: their range)" if mean_over_seeds else "(95% Wilson band)"))
    figure.tight_layout()
    return figure


def level_table(histories: list[pd.DataFrame], labels: list[str], level: SuccessLevel) -> str:
    """The grid's "episodes to level" section over these runs: each history a cell, its method
    the label's first word and its seed the label's last (``hindsight.experiments.sample_efficiency``)."""
    cells = [history.assign(method=label.split()[0], cell=label, seed=label.split()[-1]) for history, label in zip(histories, labels)]
    table = episodes_to_level_markdown(pd.concat(cells, ignore_index=True), level.rate, level.split, level.decoding)
    return table or f"no held-out points at {level.split}, {level.decoding} in these histories"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("histories", nargs="+", help="training_history.parquet files, one per seed")
    parser.add_argument("--labels", nargs="*", help="one label per history (default: seed 0, seed 1, ...)")
    parser.add_argument("--out", default="learning_curves.png")
    parser.add_argument("--mean-over-seeds", action="store_true",
                        help="one line per method (the labels' first word): the seeds' mean, banded by their range")
    parser.add_argument("--level", type=float, help="also print the episodes each run needs to first reach this held-out success (0-1)")
    parser.add_argument("--level-split", default=SuccessLevel.split, help="the split the level is read on (default %(default)s)")
    parser.add_argument("--level-decoding", default=SuccessLevel.decoding, help="the decoding it is read at (default %(default)s: T = 0.4)")
    args = parser.parse_args()
    labels = args.labels or [f"seed {i}" for i in range(len(args.histories))]
    if len(labels) != len(args.histories):
        parser.error(f"{len(labels)} labels for {len(args.histories)} histories")
    histories = [pd.read_parquet(path) for path in args.histories]
    figure = draw(histories, labels, args.mean_over_seeds)
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    if args.level is not None:
        print()
        print(level_table(histories, labels, SuccessLevel(args.level, args.level_split, args.level_decoding)))


if __name__ == "__main__":
    main()

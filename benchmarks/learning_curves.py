"""conf/learning's held-out curves over seeds, on one figure: the figure of docs/learning.md.

Reads the training histories that ``kedro run --env learning`` wrote, one per seed
(``data/07_model_output/training_history.parquet/<version>/training_history.parquet``, or
any copy), and draws, per split (seen, unseen) and decoding (greedy, T = 0.4), each seed's
held-out success against the update with its Wilson 95% band (``hindsight.evaluation.curves``).

    python benchmarks/learning_curves.py HISTORY_SEED0 HISTORY_SEED1 HISTORY_SEED2 --out docs/images/learning_curves.png
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/learning.md#the-first-configuration-4-tasks-x-8-4-epochs-per-seed",)
MEASURED = "seconds (it reads three histories and draws `docs/images/learning_curves.png`)"
LAST_RUN = "2026-12-07 (git: docs/images/learning_curves.png last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hindsight.evaluation.curves import curve_points  # noqa: E402


def draw(histories: list[pd.DataFrame], labels: list[str]):
    """One panel per (split, decoding) of the curves, a line and band per history."""
    points = [curve_points(history) for history in histories]
    panels = sorted({(s, d) for p in points for s, d in zip(p["split"], p["decoding"])}, key=lambda key: (key[0] != "unseen", key))
    if not panels:
        raise SystemExit("no held-out points in these histories (training.rl.eval_every was 0)")
    figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for axis, (split, decoding) in zip(axes[0], panels):
        for part, label in zip(points, labels):
            rows = part[(part["split"] == split) & (part["decoding"] == decoding)].sort_values("update")
            if rows.empty:
                continue
            line, = axis.plot(rows["update"], 100 * rows["success_rate"], marker="s", label=label)
            axis.fill_between(rows["update"], 100 * rows["ci_low"], 100 * rows["ci_high"], color=line.get_color(), alpha=0.12)
        axis.set_title(f"{split}, {decoding}")
        axis.set_xlabel("update")
        axis.set_ylim(0, 80)
        axis.legend(fontsize=8)
    axes[0][0].set_ylabel("held-out success % (95% Wilson band)")
    figure.tight_layout()
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("histories", nargs="+", help="training_history.parquet files, one per seed")
    parser.add_argument("--labels", nargs="*", help="one label per history (default: seed 0, seed 1, ...)")
    parser.add_argument("--out", default="learning_curves.png")
    args = parser.parse_args()
    labels = args.labels or [f"seed {i}" for i in range(len(args.histories))]
    figure = draw([pd.read_parquet(path) for path in args.histories], labels)
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

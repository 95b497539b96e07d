"""How often does a cluster-bootstrap interval of the AUROC hold the true value? (prints a table)

Whether SEED's gate helps depends on whether ``Delta = log p(a | skill) - log p(a)`` ranks
optimal actions above suboptimal ones: the AUROC, estimated over a few episodes whose actions
share a skill and a prompt. An earlier percentile interval over 11 episodes covered the truth
in 88% of simulations, not 95%. This script simulates the model of
``hindsight.algorithms.ranking_coverage.auroc_interval_coverage`` (scores ``u_c + e + separation *
label``, a per-episode effect ``u_c``, 8 to 12 actions per episode) and, per number of
episodes, prints the share of simulated data sets whose interval holds the true value, with
the mean interval width, for each interval method (the same data sets for every method), for:

- ``pooled``: the AUROC over all pairs (target: two actions of different episodes);
- ``within``: the within-step AUROC (strata of ``--stratum-size`` consecutive actions);
- ``paired pooled`` / ``paired within``: the paired difference against a control score with
  the same episode effect and no separation (target: AUROC - 1/2).

Run from the project root (numpy only; about half a minute on one core by default):

    python benchmarks/auroc_coverage.py
    python benchmarks/auroc_coverage.py --clusters 11 60 --simulations 1000 --resamples 1000
"""

from __future__ import annotations

GROUP = "skills"
REPRODUCES = ("docs/hidden_information.md#6-does-the-skills-shift-rank-the-best-action-first",)
MEASURED = "about half a minute on one core with the defaults (the docstring; CPU not named)"
LAST_RUN = "by 2026-12-07 (git: the figure's lines in docs/hidden_information.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import math
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from profile_run import cpu_model  # noqa: E402

TARGETS = {
    "pooled": dict(stratum_size=None, control_separation=None),
    "within": dict(stratum_size="stratum", control_separation=None),
    "paired pooled": dict(stratum_size=None, control_separation=0.0),
    "paired within": dict(stratum_size="stratum", control_separation=0.0),
}
"""Per row kind, the arguments of ``auroc_interval_coverage`` (``"stratum"``: ``--stratum-size``)."""


def main() -> None:
    from hindsight.algorithms import INTERVAL_METHODS, auroc_interval_coverage

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, nargs="+", default=[11, 20, 43, 60], help="episodes per data set")
    parser.add_argument("--items", type=int, nargs=2, default=[8, 12], metavar=("MIN", "MAX"), help="actions per episode")
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--methods", nargs="+", default=list(INTERVAL_METHODS), choices=list(INTERVAL_METHODS))
    parser.add_argument("--simulations", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--positive-share", type=float, default=0.3, help="share of optimal actions")
    parser.add_argument("--separation", type=float, default=1.0, help="positive mean shift (noise sd 1)")
    parser.add_argument("--cluster-sd", type=float, default=1.0, help="sd of the per-episode effect")
    parser.add_argument("--stratum-size", type=int, default=4, help="actions per step for the within-step AUROC")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    started = time.perf_counter()
    standard_error = math.sqrt(args.level * (1 - args.level) / args.simulations)
    print(f"Cluster-bootstrap AUROC intervals, nominal {args.level:.0%}: coverage (mean width) over "
          f"{args.simulations} simulations x {args.resamples} resamples (Monte Carlo s.e. ~{standard_error:.3f} at nominal)")
    print(f"model: {args.items[0]}-{args.items[1]} actions per episode, P(optimal) {args.positive_share}, "
          f"separation {args.separation}, episode-effect sd {args.cluster_sd}, steps of {args.stratum_size} actions")
    print(f"CPU: {cpu_model()}")
    print()
    header = f"{'target':<14}{'episodes':>9}{'true':>8}" + "".join(f"{method:>22}" for method in args.methods) + f"{'seconds':>9}"
    print(header)
    print("-" * len(header))
    for target in args.targets:
        options = dict(TARGETS[target])
        if options["stratum_size"] == "stratum":
            options["stratum_size"] = args.stratum_size
        for clusters in args.clusters:
            row_started = time.perf_counter()
            cells, true_value = [], math.nan
            for method in args.methods:
                result = auroc_interval_coverage(
                    clusters, tuple(args.items), positive_share=args.positive_share, separation=args.separation,
                    cluster_sd=args.cluster_sd, simulations=args.simulations, resamples=args.resamples,
                    level=args.level, method=method, seed=args.seed, **options,
                )
                true_value = result.target
                undefined = f" {result.undefined}NaN" if result.undefined else ""
                cells.append(f"{result.coverage:.3f} ({result.mean_width:.3f}){undefined}")
            seconds = time.perf_counter() - row_started
            print(f"{target:<14}{clusters:>9}{true_value:>8.3f}" + "".join(f"{cell:>22}" for cell in cells) + f"{seconds:>9.1f}")
    print()
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""The premise check pooled over several runs: token-weighted teacher gaps, split by outcome,
by whether the skill lists the step's action, and on the tokens the plain policy was unsure
of (``stage1.premise.premise_metrics``; versions written before that split lack it).

Each ``kedro run --pipeline stage1 --nodes stage1.check_skill_premise`` (e.g. with
``environment.seen_seed_offset=510``, another sample of held-out tasks) writes one version of
``data/08_reporting/skill_premise.parquet``; this prints each version given and their pool.

    python benchmarks/premise_pool.py 2026-12-02T01.36.18.768Z 2026-12-02T02.21.23.094Z
    python benchmarks/premise_pool.py --last 3

The pool also prints, per skill source and outcome, the gap and the gap minus the unrelated
skill's on the same episodes (the same tokens: the skill's content beyond mere extra
context), token-weighted, each with a 95% bootstrap interval over episodes.
"""

from __future__ import annotations

GROUP = "skills"
REPRODUCES = (
    "docs/pretrained.md",
    "docs/journal/2026-12-01-compact-skills-route-a.md#seed-with-the-policys-own-skills-route-a",
)
MEASURED = "seconds (it reads the versions' tables; each premise sample it pools took 32 min in docs/pretrained.md)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/pretrained.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))

PREMISE = Path("08_reporting") / "skill_premise.parquet"
"""The premise check's versioned table, under the data folder (``--data``)."""


def describe(label: str, table) -> list[str]:
    """Printed lines: episodes, won, and per source and outcome the gap, listed and other."""
    from hindsight.stage1.premise import premise_metrics

    own = table[table["skill_source"] == "own"]
    lines = [f"{label}: {len(own)} episodes, {int(own['success'].sum())} won"]
    metrics = premise_metrics(table, "p")
    for source in sorted(table["skill_source"].unique()):
        for outcome in ("won", "lost"):
            key = f"p/{source}/{outcome}"
            if f"{key}/gap_mean" not in metrics:
                continue
            sides = "  ".join(
                f"{side} {metrics.get(f'{key}/{side}/gap_mean', float('nan')):+.3f} ({metrics[f'{key}/{side}/tokens']:.0f} tokens)"
                for side in ("listed", "unlisted", "unsure")
                if f"{key}/{side}/tokens" in metrics
            )
            lines.append(f"  {source:<10} {outcome:<5} gap {metrics[f'{key}/gap_mean']:+.3f}  {sides}")
    return lines


def paired_against_unrelated(table, resamples: int = 2000, seed: int = 0) -> list[str]:
    """Printed lines: per source and outcome, over the episodes it and the unrelated skill
    both scored, the token-weighted mean gap and mean (its gap - the unrelated skill's),
    each with a 95% bootstrap interval (episodes resampled)."""
    import numpy as np

    table = table.assign(key=table["version"] + "/" + table["episode_id"]) if "version" in table else table.assign(key=table["episode_id"])
    unrelated = table[table["skill_source"] == "unrelated"].set_index("key")
    lines = []
    for source in sorted(set(table["skill_source"]) - {"unrelated"}):
        rows = table[table["skill_source"] == source].set_index("key")
        for outcome, won in (("won", True), ("lost", False)):
            both = rows[rows["success"] == won].index.intersection(unrelated.index)
            if not len(both):
                continue
            gap = rows.loc[both, "gap_mean"].to_numpy()
            difference = gap - unrelated.loc[both, "gap_mean"].to_numpy()
            weights = rows.loc[both, "tokens"].to_numpy(dtype=float)
            draws = np.random.default_rng(seed).integers(0, len(both), size=(resamples, len(both)))
            figures = []
            for values in (gap, difference):
                means = (values[draws] * weights[draws]).sum(axis=1) / weights[draws].sum(axis=1)
                low, high = np.percentile(means, [2.5, 97.5])
                figures.append(f"{float((values * weights).sum() / weights.sum()):+.3f} (95% {low:+.3f} to {high:+.3f})")
            lines.append(f"  {source:<10} {outcome:<5} gap {figures[0]}, minus unrelated {figures[1]}, {len(both)} episodes")
    return lines


def main() -> None:
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help="versions of skill_premise.parquet (folder names)")
    parser.add_argument("--last", type=int, default=0, help="the newest N versions instead")
    parser.add_argument("--data", type=Path, default=PROJECT_ROOT / "data", help="the catalog's data folder")
    args = parser.parse_args()
    premise_dir = args.data / PREMISE
    available = sorted(path.parent.name for path in premise_dir.glob("*/skill_premise.parquet"))
    versions = available[-args.last :] if args.last else args.versions
    if not versions:
        raise SystemExit(f"no version chosen; available in {premise_dir}: {available}")
    missing = [version for version in versions if version not in available]
    if missing:
        raise SystemExit(f"no such version of skill_premise: {missing}; available: {available}")
    tables = [pd.read_parquet(premise_dir / version / "skill_premise.parquet") for version in versions]
    for version, table in zip(versions, tables):
        print("\n".join(describe(version, table)))
    pooled = pd.concat([table.assign(version=version) for version, table in zip(versions, tables)], ignore_index=True)
    if len(tables) > 1:
        print("\n".join(describe("pooled", pooled)))
    print("\n".join(paired_against_unrelated(pooled)))


if __name__ == "__main__":
    main()

"""Episodes to level: how many environment episodes each method of the grid plays before its
held-out success first reaches a level fixed before the runs (``experiments.success_level``;
the sample-efficiency figure of the SEED paper).

Per cell, its held-out curve (``experiments.curves_report.grid_curve_points``) is read at the
level's split and decoding; the cell reaches the level at its first evaluated point (in update
order) at or above it, and its figure is the training episodes played up to that point
(``evaluation.curves``: the cumulative ``rollout/env_episodes``; 0 when the start is already at
the level). A curve is only known at its points (every ``training.rl.eval_every`` updates), so
a figure is the first point's, never a value between points; a cell whose points all stay
below the level has "not reached", never a figure extrapolated past its budget.

Over the seeds of a method: how many seeds reached the level, the median of their figures
counting a seed that did not as above every figure (so the median is "not reached" when half
the seeds or more did not), and the mean only when every seed reached it.
"""

from __future__ import annotations

import math

import pandas as pd

from hindsight.experiments.curves_report import grid_curve_points, method_label, methods_in_order

LEVEL_COLUMNS = ["method", "cell", "seed", "reached", "update", "env_episodes", "env_steps", "success_rate"]
NOT_REACHED = "not reached"


def episodes_to_level(histories: pd.DataFrame | None, rate: float, split: str, decoding: str, fraction: float = 1.0) -> pd.DataFrame:
    """One row per cell with a curve at ``split`` and ``decoding`` (``LEVEL_COLUMNS``):
    whether it reached ``rate`` and, if it did, the update, the environment episodes and steps
    played until then and the success of that point (NaN where it did not)."""
    points = grid_curve_points(histories, fraction)
    if points.empty:
        return pd.DataFrame(columns=LEVEL_COLUMNS)
    points = points[(points["split"] == split) & (points["decoding"] == decoding)]
    seeds = histories.drop_duplicates("cell").set_index("cell")["seed"] if "cell" in histories else pd.Series(dtype=int)
    rows = []
    for (method, cell), curve in points.groupby(["method", "cell"], sort=False):
        curve = curve.sort_values("update")
        above = curve[curve["success_rate"] >= rate - 1e-12]
        first = above.iloc[0] if len(above) else None
        rows.append({
            "method": method, "cell": cell, "seed": seeds.get(cell, cell), "reached": first is not None,
            **({key: float(first[key]) for key in ("update", "env_episodes", "env_steps", "success_rate")} if first is not None
               else dict.fromkeys(("update", "env_episodes", "env_steps", "success_rate"), math.nan)),
        })
    return pd.DataFrame(rows, columns=LEVEL_COLUMNS)


def over_seeds(figures: list[float]) -> tuple[int, float, float]:
    """(seeds that reached, median with "not reached" above every figure, mean if all reached)
    of one method's per-seed episodes (NaN: not reached); NaN where the figure is not reached."""
    reached = sorted(f for f in figures if not math.isnan(f))
    ordered = reached + [math.inf] * (len(figures) - len(reached))
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    mean = sum(reached) / len(reached) if reached and len(reached) == len(figures) else math.nan
    return len(reached), (median if math.isfinite(median) else math.nan), mean


def _episodes(value: float, missing: str = NOT_REACHED) -> str:
    return missing if math.isnan(value) else f"{value:.0f}"


def episodes_to_level_markdown(histories: pd.DataFrame | None, rate: float, split: str, decoding: str, fraction: float = 1.0) -> str:
    """The report's section: per method, each seed's episodes to the level (its update in
    brackets) and the figures over seeds; "" when no cell has a curve at that split and decoding."""
    table = episodes_to_level(histories, rate, split, decoding, fraction)
    if table.empty:
        return ""
    seeds = sorted(set(table["seed"]), key=str)
    lines = [
        f"## Episodes to level ({100 * rate:.0f}% held-out success, {split} split, {decoding} decoding)", "",
        "Environment episodes played until the first held-out point at or above the level (its update in brackets); "
        f'"{NOT_REACHED}" where no point reached it. Points are every `eval_every` updates: a figure is the first '
        "point's, never interpolated or extrapolated. Over seeds: the median counts a seed not reaching the level "
        "as above every figure; the mean is given only when every seed reached it.", "",
        "| method | " + " | ".join(f"seed {seed}" for seed in seeds) + " | seeds reached | median | mean |",
        "|---|" + "---:|" * (len(seeds) + 3),
    ]
    for method in methods_in_order(table):
        mine = table[table["method"] == method].set_index("seed")
        per_seed = []
        for seed in seeds:
            if seed not in mine.index:
                per_seed.append("-")
                continue
            row = mine.loc[seed]
            per_seed.append(f"{row['env_episodes']:.0f} ({row['update']:.0f})" if row["reached"] else NOT_REACHED)
        count, median, mean = over_seeds([float(v) for v in mine["env_episodes"]])
        lines.append(f"| {method_label(method)} | " + " | ".join(per_seed) + f" | {count}/{len(mine)} | {_episodes(median)} | {_episodes(mean, '-')} |")
    return "\n".join(lines) + "\n"

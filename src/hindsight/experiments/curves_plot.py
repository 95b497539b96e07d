"""The grid's held-out curves side by side, as a figure and as MLflow metrics.

``method_curves`` reduces every cell's held-out curve (``curves_report.grid_curve_points``) to
one curve per method, split and decoding: per evaluated update, the mean success over the
seeds with its interval (the range over the seeds; one seed: its own Wilson 95% interval, as
the report's tables) and the mean environment episodes played so far.

- ``learning_curves_plot``: one row of panels per split and decoding, against updates (left)
  and against environment episodes (right), every method a line with its interval band;
- ``curve_metrics``: the same as metrics of the grid's MLflow run, per method and series,
  ``grid_curves/<method>/<split>/<decoding>/{mean,low,high}`` at step = update and
  ``grid_curves_by_episodes/...`` at step = the episodes played, so MLflow's charts draw them
  side by side against either.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hindsight.experiments.curves_report import grid_curve_points, method_label, methods_in_order  # noqa: E402

CURVE_COLUMNS = ["method", "split", "decoding", "update", "env_episodes", "mean", "low", "high", "seeds"]


def method_curves(histories: pd.DataFrame | None, fraction: float = 1.0) -> pd.DataFrame:
    """One row per method, split, decoding and evaluated update (``CURVE_COLUMNS``)."""
    points = grid_curve_points(histories, fraction)
    if points.empty:
        return pd.DataFrame(columns=CURVE_COLUMNS)
    rows = []
    for (method, split, decoding, update), group in points.groupby(["method", "split", "decoding", "update"], sort=False):
        one = len(group) == 1
        rows.append({
            "method": method, "split": split, "decoding": decoding, "update": int(update),
            "env_episodes": float(group["env_episodes"].mean()), "mean": float(group["success_rate"].mean()),
            "low": float(group["ci_low"].iloc[0] if one else group["success_rate"].min()),
            "high": float(group["ci_high"].iloc[0] if one else group["success_rate"].max()), "seeds": int(group["cell"].nunique()),
        })
    order = {method: place for place, method in enumerate(methods_in_order(points))}
    table = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    return table.sort_values(["split", "decoding", "method", "update"], key=lambda c: c.map(order) if c.name == "method" else c).reset_index(drop=True)


def learning_curves_plot(histories: pd.DataFrame | None, fraction: float = 1.0):
    """Held-out success of every method against updates and against environment episodes,
    one row of panels per split and decoding (``module docstring``)."""
    curves = method_curves(histories, fraction)
    series = list(dict.fromkeys(zip(curves["split"], curves["decoding"])))
    figure, axes = plt.subplots(max(len(series), 1), 2, figsize=(12, 3.6 * max(len(series), 1)), squeeze=False)
    for row, (split, decoding) in zip(axes, series):
        mine = curves[(curves["split"] == split) & (curves["decoding"] == decoding)]
        for axis, x, label in ((row[0], "update", "updates"), (row[1], "env_episodes", "environment episodes (training)")):
            for method in dict.fromkeys(mine["method"]):
                line = mine[mine["method"] == method]
                drawn = axis.plot(line[x], 100 * line["mean"], marker="o", label=f"{method_label(method)} (n={line['seeds'].max()})")
                axis.fill_between(line[x], 100 * line["low"], 100 * line["high"], alpha=0.15, color=drawn[0].get_color())
            name = f"{split}, {decoding}" if decoding else split
            axis.set_title(f"held-out {name}: success vs {label}", fontsize=9)
            axis.set_xlabel(label)
            axis.set_ylabel("success % (band: range over seeds)")
            axis.legend(fontsize=7)
    if not series:
        axes[0][0].set_title("no held-out points in the grid's histories")
    figure.tight_layout()
    return figure


def curve_metrics(histories: pd.DataFrame | None, fraction: float = 1.0) -> list[tuple[dict[str, float], int]]:
    """(metrics, step) to log for every point of ``method_curves`` (``module docstring``)."""
    logged = []
    for row in method_curves(histories, fraction).itertuples(index=False):
        name = f"{row.method}/{row.split}/{row.decoding or 'first'}"
        values = {"mean": row.mean, "low": row.low, "high": row.high}
        logged.append(({f"grid_curves/{name}/{k}": v for k, v in values.items()}, int(row.update)))
        if pd.notna(row.env_episodes):
            logged.append(({f"grid_curves_by_episodes/{name}/{k}": v for k, v in values.items()}, int(round(row.env_episodes))))
    return logged

"""The grid report's learning curves and run health, per method, as markdown tables.

Every cell's history (one row per cell and update, ``experiments.report``'s ``histories``)
holds its held-out curve points and its health per update (``evaluation.curves``). Per
method, over the seeds of the cells at one fraction of the training tasks:

- ``side_by_side_tables``: per split and decoding, the methods side by side, one row per
  evaluated update: the mean held-out success over the seeds, in brackets the range over the
  seeds (with one seed, its own Wilson 95% interval), and the environment episodes played so far;
- ``heldout_curves_table``: per method, one row per evaluated update, the mean environment steps
  and episodes so far and per split and decoding the mean held-out success over the seeds, with
  the same brackets;
- ``health_table``: one row per update, the mean over the seeds of each health signal
  (``evaluation.curves.HEALTH_COLUMNS``) the method logged.
"""

from __future__ import annotations

import pandas as pd

from hindsight.evaluation.curves import HEALTH_COLUMNS, curve_points, health_columns, health_value
from hindsight.experiments.methods import METHODS


def method_label(method: str) -> str:
    """How the reports name a grid method (its own name when the grid does not know it)."""
    return METHODS[method].label if method in METHODS else method


def methods_in_order(rows: pd.DataFrame) -> list[str]:
    """The methods of ``rows``, in the grid's order (unknown ones last)."""
    present = set(rows["method"])
    return [m for m in METHODS if m in present] + sorted(present - set(METHODS))


def _cells_at(histories: pd.DataFrame | None, fraction: float) -> pd.DataFrame:
    if histories is None or histories.empty or not {"method", "update"} <= set(histories.columns):
        return pd.DataFrame()
    return histories[histories["fraction"] == fraction] if "fraction" in histories else histories


def grid_curve_points(histories: pd.DataFrame | None, fraction: float = 1.0) -> pd.DataFrame:
    """Every cell's held-out curve points (``evaluation.curves.curve_points``) with its
    ``method`` and ``cell``."""
    rows = _cells_at(histories, fraction)
    if rows.empty:
        return pd.DataFrame()
    key = "cell" if "cell" in rows else "seed"
    groups = rows.groupby(["method", key], sort=False)
    parts = [curve_points(history).assign(method=method, cell=cell) for (method, cell), history in groups]
    parts = [part for part in parts if not part.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _cell(points: pd.DataFrame) -> str:
    """Mean % over the seeds [range over the seeds]; one seed: its value [its Wilson interval]."""
    if len(points) == 1:
        low, high = points["ci_low"].iloc[0], points["ci_high"].iloc[0]
    else:
        low, high = points["success_rate"].min(), points["success_rate"].max()
    return f"{100 * points['success_rate'].mean():.1f} [{100 * low:.1f}-{100 * high:.1f}]"


def heldout_curves_table(histories: pd.DataFrame | None, fraction: float = 1.0) -> str:
    """Per method, its held-out curve: one row per evaluated update (``module docstring``);
    "" when no cell logged a held-out point."""
    points = grid_curve_points(histories, fraction)
    if points.empty:
        return ""
    series = sorted(set(zip(points["split"], points["decoding"])))
    header = [f"{split}, {decoding}" if decoding else split for split, decoding in series]
    lines = []
    for method in methods_in_order(points):
        mine = points[points["method"] == method]
        lines += [f"### {method_label(method)}", "", "| update | env steps (mean) | env episodes (mean) | " + " | ".join(header) + " | seeds |",
                  "|---:|---:|---:|" + "---:|" * (len(series) + 1)]
        for update, rows in mine.groupby("update", sort=True):
            cells = []
            for split, decoding in series:
                match = rows[(rows["split"] == split) & (rows["decoding"] == decoding)]
                cells.append(_cell(match) if len(match) else "-")
            progress = " | ".join(_count(rows[column].mean()) for column in ("env_steps", "env_episodes"))
            lines.append(f"| {int(update)} | {progress} | " + " | ".join(cells) + f" | {rows['cell'].nunique()} |")
        lines.append("")
    return "\n".join(lines)


def _count(value: float) -> str:
    return "-" if pd.isna(value) else f"{value:.0f}"


def side_by_side_tables(histories: pd.DataFrame | None, fraction: float = 1.0) -> str:
    """Per split and decoding, every method's held-out curve side by side (``module
    docstring``): one column per method and one of the environment episodes played so far
    (mean over the cells), or per method in its cell when the methods played different counts
    (WM-R1 plays none in the environment); "" when no cell logged a held-out point."""
    points = grid_curve_points(histories, fraction)
    if points.empty:
        return ""
    methods = methods_in_order(points)
    lines = []
    for (split, decoding), series in points.groupby(["split", "decoding"], sort=True):
        episodes = series.groupby(["update", "method"])["env_episodes"].mean().unstack()
        shared = bool((episodes.max(axis=1) - episodes.min(axis=1)).fillna(0).le(0.5).all())
        lines += [f"### {split}, {decoding}" if decoding else f"### {split}", "",
                  "| update | " + ("env episodes | " if shared else "") + " | ".join(method_label(m) for m in methods) + " |",
                  "|---:|" + ("---:|" if shared else "") + "---:|" * len(methods)]
        for update, rows in series.groupby("update", sort=True):
            cells = []
            for method in methods:
                mine = rows[rows["method"] == method]
                text = _cell(mine) if len(mine) else "-"
                cells.append(text if shared or mine.empty else f"{text} at {_count(mine['env_episodes'].mean())} ep.")
            first = f"{_count(rows['env_episodes'].mean())} | " if shared else ""
            lines.append(f"| {int(update)} | {first}" + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def health_table(histories: pd.DataFrame | None, fraction: float = 1.0) -> str:
    """Per method, the mean over its seeds of every health signal it logged, per update;
    "" when no cell logged one."""
    rows = _cells_at(histories, fraction)
    if rows.empty:
        return ""
    rows = rows[rows["update"] > 0]
    lines = []
    for method in methods_in_order(rows) if not rows.empty else []:
        mine = rows[rows["method"] == method]
        columns = health_columns(mine)
        if not columns:
            continue
        means = mine.groupby("update", sort=True)[columns].mean()
        lines += [f"### {method_label(method)}", "", "| update | " + " | ".join(HEALTH_COLUMNS[c] for c in columns) + " |",
                  "|---:|" + "---:|" * len(columns)]
        for update, row in means.iterrows():
            lines.append(f"| {int(update)} | " + " | ".join(health_value(c, row[c]) for c in columns) + " |")
        lines.append("")
    return "\n".join(lines)


def curves_section(histories: pd.DataFrame | None, fraction: float = 1.0) -> list[str]:
    """The report's lines of both tables (their headings and notes); [] when neither has rows."""
    lines: list[str] = []
    side_by_side = side_by_side_tables(histories, fraction)
    if side_by_side:
        lines += [f"## Held-out curves side by side (fraction {100 * fraction:.0f}%)", "",
                  "Success % at every evaluated update, per split and decoding: mean over seeds, in brackets the range "
                  "over seeds (one seed: its Wilson 95% interval); env episodes: the training episodes played so far "
                  "(mean over cells). The curves against updates and against episodes are in the curves figure.", "",
                  side_by_side]
    curves = heldout_curves_table(histories, fraction)
    if curves:
        lines += [f"## Held-out curves per method (fraction {100 * fraction:.0f}%)", "",
                  "Success % per split and decoding at every evaluated update: mean over seeds, in brackets the range "
                  "over seeds (one seed: its Wilson 95% interval).", "", curves]
    health = health_table(histories, fraction)
    if health:
        lines += [f"## Run health per update (mean over seeds, fraction {100 * fraction:.0f}%)", "", health]
    return lines

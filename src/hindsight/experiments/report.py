"""Tables, curves and the report of the experiment grid (one row per cell in, paper-style
summaries out). Numbers are mean +- std over seeds of the final held-out success of each
cell, with a 95% interval over the seeds' pooled episodes (and pass^1..pass^k where the
cells played several trials per task); every row names its cells' MLflow
run ids so a number can be traced to its runs, the mechanism table shows what each
method's own terms did (parse rate, distillation loss, gate, teacher gap), and the curve and
health tables (``experiments.curves_report``) how each method got there, update by update."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from hindsight.evaluation.metrics import wilson_interval  # noqa: E402
from hindsight.experiments.curves_report import curves_section  # noqa: E402
from hindsight.experiments.methods import METHODS  # noqa: E402

_METRIC = re.compile(r"^eval/(?P<split>[^/]+)/(?P<task_type>[^/]+)/success_rate$")
_PASS_K = re.compile(r"^eval/(?P<split>[^/]+)/all/pass_hat_(?P<k>\d+)$")


def _completed(cells: pd.DataFrame) -> pd.DataFrame:
    return cells[cells["status"].isin(["finished", "skipped"])]


def results_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Long table: method, fraction, split, task_type, mean, std (over seeds), seeds,
    episodes per seed, run ids."""
    rows = []
    done = _completed(cells)
    for column in sorted(c for c in done.columns if _METRIC.match(str(c))):
        match = _METRIC.match(column)
        episodes_column = column.replace("success_rate", "episodes")
        for (method, fraction), group in done.groupby(["method", "fraction"]):
            values = group[column].dropna().astype(float)
            if values.empty:
                continue
            rows.append(
                {
                    "method": method,
                    "fraction": float(fraction),
                    "split": match["split"],
                    "task_type": match["task_type"],
                    "mean": values.mean(),
                    "std": values.std(ddof=1) if len(values) > 1 else 0.0,
                    "seeds": len(values),
                    "episodes_per_seed": float(group[episodes_column].mean()) if episodes_column in group else np.nan,
                    "run_ids": " ".join(str(r) for r in group["run_id"].dropna()),
                }
            )
    return pd.DataFrame(rows, columns=["method", "fraction", "split", "task_type", "mean", "std", "seeds", "episodes_per_seed", "run_ids"])


def _mean_spread(mean: float, std: float) -> str:
    """A mean ± std over seeds as a table cell (percent)."""
    return f"{100 * mean:.1f} ± {100 * std:.1f}"


def _wide(results: pd.DataFrame, fraction: float = 1.0) -> str:
    part = results[results["fraction"] == fraction]
    if part.empty:
        return "(no completed cells)\n"
    columns = sorted({(s, t) for s, t in zip(part["split"], part["task_type"])}, key=lambda st: (st[0], st[1] == "all", st[1]))
    header = "| method | " + " | ".join(f"{s}: {'average' if t == 'all' else t}" for s, t in columns) + " | seeds |"
    lines = [header, "|---|" + "---:|" * len(columns) + "---:|"]
    for method in [m for m in METHODS if m in set(part["method"])]:
        rows = part[part["method"] == method].set_index(["split", "task_type"])
        cells = []
        for key in columns:
            if key in rows.index:
                row = rows.loc[key]
                cells.append(_mean_spread(row["mean"], row["std"]))
            else:
                cells.append("-")
        seeds = int(rows["seeds"].max())
        lines.append(f"| {METHODS[method].label} | " + " | ".join(cells) + f" | {seeds} |")
    return "\n".join(lines) + "\n"


def pass_k_table(cells: pd.DataFrame, fraction: float = 1.0) -> str:
    """pass^1..pass^K over all task types per split (mean ± std over seeds of the cells at
    ``fraction``), from the cells whose held-out evaluation played several trials per task
    (``heldout.trials_per_task``); empty when none did."""
    done = _completed(cells)
    done = done[done["fraction"] == fraction] if "fraction" in done else done
    columns = sorted(
        (c for c in done.columns if _PASS_K.match(str(c)) and done[c].notna().any()),
        key=lambda c: (_PASS_K.match(c)["split"], int(_PASS_K.match(c)["k"])),
    )
    if not columns:
        return ""
    header = [f"{_PASS_K.match(c)['split']}: pass^{_PASS_K.match(c)['k']}" for c in columns]
    lines = ["| method | " + " | ".join(header) + " | seeds |", "|---|" + "---:|" * (len(columns) + 1)]
    for method in [m for m in METHODS if m in set(done["method"])]:
        rows = done[done["method"] == method]
        texts = []
        for column in columns:
            values = rows[column].dropna().astype(float)
            spread = values.std(ddof=1) if len(values) > 1 else 0.0
            texts.append(_mean_spread(values.mean(), spread) if len(values) else "-")
        seeds = int(rows[columns].notna().any(axis=1).sum())
        lines.append(f"| {METHODS[method].label} | " + " | ".join(texts) + f" | {seeds} |")
    return "\n".join(lines) + "\n"


MECHANISM_METRICS = {
    "opd/skill_parse_rate": "parse rate",
    "opd/bank_hit_rate": "bank hit rate",
    "losses/opd": "distillation loss",
    "opd/gate_mean": "gate mean",
    "opd/teacher_gap_mean": "teacher gap (nats)",
    "labels/optimal_share": "played actions optimal",
    "opd/gate_push": "gate push, optimal minus suboptimal",
    "opd/shift_auroc": "shift AUROC, optimal vs suboptimal",
    "opd/teacher_gap_positive_ratio": "gap > 0 share",
    "opd/skill_unrelated_share": "unrelated-skill share",
    "empo/match_rate": "EMPO match rate",
    "empo/patch_rate": "EMPO patch rate",
    "world_model/calls": "world-model calls",
    "world_model/simulated_success_rate": "simulated success",
    "stepo/kept_sample_ratio": "STEPO kept samples",
}
"""The per-update metrics that show a method's own mechanism ran, by label: SEED's terms
(with, where the environment labels the played actions, the share played optimal and the
gate's push toward them), EMPO's match and patch rates against the expert, WM-R1's world-model calls and the success
of its simulated episodes, the share of samples STEPO's zero-variance filter kept."""


def _pooled_intervals(results: pd.DataFrame, fraction: float = 1.0) -> str:
    """Average over task types per split: the mean and the Wilson 95% interval of the
    seeds' episodes pooled (it treats them as independent, so it leaves out the spread
    between seeds that the std shows)."""
    part = results[(results["fraction"] == fraction) & (results["task_type"] == "all")]
    if part.empty:
        return ""
    splits = sorted(set(part["split"]))
    lines = ["| method | " + " | ".join(f"{s}: % [95% interval]" for s in splits) + " | episodes per split |", "|---|" + "---:|" * (len(splits) + 1)]
    for method in [m for m in METHODS if m in set(part["method"])]:
        rows = part[part["method"] == method].set_index("split")
        texts, episodes = [], "-"
        for split in splits:
            if split not in rows.index or pd.isna(rows.loc[split, "episodes_per_seed"]):
                texts.append("-")
                continue
            row = rows.loc[split]
            trials = int(round(row["episodes_per_seed"] * row["seeds"]))
            low, high = wilson_interval(int(round(row["mean"] * trials)), trials)
            texts.append(f"{100 * row['mean']:.1f} [{100 * low:.1f}-{100 * high:.1f}]")
            episodes = str(trials)
        lines.append(f"| {METHODS[method].label} | " + " | ".join(texts) + f" | {episodes} |")
    return "\n".join(lines) + "\n"


def mechanism_table(histories: pd.DataFrame, fraction: float = 1.0) -> str:
    """Per method (cells at ``fraction``): the mean over cells and updates of each
    ``MECHANISM_METRICS`` it logged, and the training-rollout success of the first and the
    last update (mean over cells). Empty when no cell logged an update."""
    if histories is None or histories.empty or "update" not in histories:
        return ""
    updates = histories[(histories["fraction"] == fraction) & (histories["update"] > 0)]
    if updates.empty:
        return ""
    present = [metric for metric in MECHANISM_METRICS if metric in updates and updates[metric].notna().any()]
    lines = ["| method | " + " | ".join(MECHANISM_METRICS[m] for m in present) + " | training success, first -> last update |",
             "|---|" + "---:|" * (len(present) + 1)]
    for method in [m for m in METHODS if m in set(updates["method"])]:
        rows = updates[updates["method"] == method]
        values = [f"{rows[m].mean():.3f}" if rows[m].notna().any() else "-" for m in present]
        by_update = rows.groupby("update")["rollout/success_rate"].mean() if "rollout/success_rate" in rows else pd.Series(dtype=float)
        success = f"{100 * by_update.iloc[0]:.0f}% -> {100 * by_update.iloc[-1]:.0f}%" if len(by_update) else "-"
        lines.append(f"| {METHODS[method].label} | " + " | ".join(values) + f" | {success} |")
    return "\n".join(lines) + "\n"


def provenance_lines(cells: pd.DataFrame) -> list[str]:
    """Where the finished cells' results come from (their summaries, ``experiments.summaries``):
    the commits and machines, and a warning when they started from different weights."""
    done = _completed(cells)
    lines = []
    for column, what in (("git_commit", "Commits"), ("cpu", "Machines")):
        if column in done and done[column].notna().any():
            counts = done[column].value_counts()
            lines.append(f"{what}: " + "; ".join(f"`{value}` ({count} cells)" for value, count in counts.items()) + ".")
    if "inputs" in done and done["inputs"].nunique() > 1:
        lines.append(f"**The cells started from {done['inputs'].nunique()} different sets of weights and skill banks** "
                     "(summaries from other machines' default runs): their comparison mixes starts.")
    return ["", *lines] if lines else []


def markdown_report(
    cells: pd.DataFrame, results: pd.DataFrame, preset: str, data_versions: dict | None = None, histories: pd.DataFrame | None = None
) -> str:
    """One page: the main table (fraction 1.0) and its pooled 95% intervals, the mechanism
    table, the held-out curves and the run health per method (from ``histories``,
    ``experiments.curves_report``), the data-efficiency table, the cells with their status, node,
    wall time and MLflow run ids, and the data versions behind them."""
    lines = [f"# Experiment report (preset `{preset}`)", ""]
    lines += ["Held-out success % (mean ± std over seeds), fraction of training tasks = 100%:", "", _wide(results, 1.0)]
    intervals = _pooled_intervals(results, 1.0)
    if intervals:
        lines += ["Average over task types, every seed's episodes pooled, Wilson 95% interval:", "", intervals]
    reliability = pass_k_table(cells, 1.0)
    if reliability:
        lines += ["pass^k over all task types (all k trials of a task succeed; mean ± std over seeds):", "", reliability]
    mechanism = mechanism_table(histories)
    if mechanism:
        lines += ["## Mechanism (mean over cells and updates, fraction 100%)", "", mechanism]
    lines += curves_section(histories)
    fractions = sorted(set(results["fraction"])) if len(results) else []
    if len(fractions) > 1:
        lines += ["## Data efficiency (average over task types)", ""]
        lines.append("| method | " + " | ".join(f"{int(100 * f)}% tasks" for f in fractions) + " |")
        lines.append("|---|" + "---:|" * len(fractions))
        average = results[results["task_type"] == "all"]
        for method in [m for m in METHODS if m in set(average["method"])]:
            row = []
            for fraction in fractions:
                values = average[(average["method"] == method) & (average["fraction"] == fraction)]
                row.append(" / ".join(f"{s}: {100 * v:.1f} ± {100 * d:.1f}" for s, v, d in zip(values["split"], values["mean"], values["std"])) or "-")
            lines.append(f"| {METHODS[method].label} | " + " | ".join(row) + " |")
        lines.append("")
    lines += ["## Cells", "", "Where each cell ran (host, or a Ray node's address/id) and its wall time:", "",
              "| cell | status | node | MLflow run | seconds | env steps |", "|---|---|---|---|---:|---:|"]
    for row in cells.itertuples(index=False):
        steps = getattr(row, "env_steps", None)
        steps_text = f"{steps:.0f}" if isinstance(steps, (int, float)) and pd.notna(steps) else "-"
        seconds = f"{row.seconds:.0f}" if pd.notna(row.seconds) else "-"
        node = getattr(row, "node", None)
        node_text = node if isinstance(node, str) and node else "-"
        lines.append(f"| {row.cell} | {row.status} | {node_text} | {row.run_id or '-'} | {seconds} | {steps_text} |")
    lines += provenance_lines(cells)
    failed = cells[cells["status"] == "failed"]
    if len(failed):
        lines += ["", "Failed cells:", ""] + [f"- {row.cell}: {row.error}" for row in failed.itertuples(index=False)]
    if data_versions:
        lines += ["", "## Data versions", ""] + [f"- `{name}`: {version}" for name, version in sorted(data_versions.items())]
    return "\n".join(lines) + "\n"


def data_efficiency_plot(cells: pd.DataFrame):
    """Final held-out success (average over task types) against the fraction of training
    tasks, per method with more than one fraction; error bars are the std over seeds."""
    done = _completed(cells)
    columns = sorted(c for c in done.columns if (m := _METRIC.match(str(c))) and m["task_type"] == "all")
    figure, axes = plt.subplots(1, max(len(columns), 1), figsize=(6 * max(len(columns), 1), 4), squeeze=False)
    for axis, column in zip(axes[0], columns):
        for method, group in done.groupby("method"):
            if group["fraction"].nunique() < 2:
                continue
            stats = group.groupby("fraction")[column].agg(["mean", "std"]).fillna(0)
            axis.errorbar(100 * stats.index, 100 * stats["mean"], yerr=100 * stats["std"], marker="o", capsize=3, label=(METHODS[method].label if method in METHODS else method))
        axis.set_title(f"data efficiency: {column.split('/')[1]}")
        axis.set_xlabel("training tasks used (%)")
        axis.set_ylabel("held-out success %")
        axis.legend(fontsize=8)
    figure.tight_layout()
    return figure

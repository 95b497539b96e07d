"""Human-readable renderings of evaluation summaries: a markdown table and a bar plot."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hindsight.evaluation.metrics import percent_interval  # noqa: E402


def markdown_table(summary: pd.DataFrame, title: str | None = None) -> str:
    """A markdown table of a ``success_summary`` (rates as percentages with 95% intervals)."""
    lines = [f"## {title}", ""] if title else []
    lines.append("| agent | split | task type | episodes | success % (95% CI) | mean steps | invalid % |")
    lines.append("|---|---|---|---:|---|---:|---:|")
    for row in summary.itertuples(index=False):
        lines.append(
            f"| {row.agent} | {row.eval_split} | {row.task_type} | {row.episodes} | "
            f"{percent_interval(row.success_rate, row.ci_low, row.ci_high)} | "
            f"{row.mean_steps:.1f} | {100 * row.invalid_action_rate:.1f} |"
        )
    return "\n".join(lines) + "\n"


def success_plot(summary: pd.DataFrame, title: str = "Held-out success"):
    """Grouped bars: success rate per task type and split, one bar per agent, with 95% CIs."""
    splits = sorted(summary["eval_split"].unique())
    agents = sorted(summary["agent"].unique())
    figure, axes = plt.subplots(1, len(splits), figsize=(5 * len(splits), 3.6), squeeze=False, sharey=True)
    for axis, split in zip(axes[0], splits):
        part = summary[summary["eval_split"] == split]
        task_types = sorted(part["task_type"].unique(), key=lambda t: (t == "all", t))
        width = 0.8 / max(len(agents), 1)
        for index, agent in enumerate(agents):
            rows = part[part["agent"] == agent].set_index("task_type").reindex(task_types)
            positions = [i + index * width for i in range(len(task_types))]
            rates = rows["success_rate"].fillna(0) * 100
            errors = [  # clipped at 0: at a rate of 1.0 the Wilson bound can fall a rounding error below it
                (rows["success_rate"] - rows["ci_low"]).fillna(0).clip(lower=0) * 100,
                (rows["ci_high"] - rows["success_rate"]).fillna(0).clip(lower=0) * 100,
            ]
            axis.bar(positions, rates, width, yerr=errors, capsize=2, label=agent)
        axis.set_xticks([i + width * (len(agents) - 1) / 2 for i in range(len(task_types))], task_types)
        axis.set_title(f"{title}: {split}")
        axis.set_ylim(0, 100)
        axis.set_ylabel("success %")
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    return figure

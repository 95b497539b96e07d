"""The RL run's own mechanism in the evaluation report: what each update logged.

The held-out tables say whether the trained agent wins more; these figures say whether the
method did what it claims while it trained. For SEED: the share of the episodes' hindsight
skills that parsed, the share of step samples distilled toward the skill-conditioned
policy, the distillation loss, the gate (its mean, and the share of tokens whose teacher
gap is positive: gate above 0.5), the teacher gap itself, and where the environment labels
the played actions optimal or not (``training.rl.action_labels``) the gate's push toward the
optimal ones and the AUROC of the skill's shift; for every method the training rollouts'
success, the share of its played actions that were optimal, and the PPO loss. They come
from the training history
(``training_history``: one row per update, the metrics the method logged to MLflow); a
method without a distillation term shows only the columns it logged.
"""

from __future__ import annotations

import pandas as pd

MECHANISM_COLUMNS: dict[str, str] = {
    "rollout/success_rate": "training rollouts won",
    "opd/skill_parse_rate": "skills parsed",
    "opd/distilled_sample_ratio": "step samples distilled",
    "losses/opd": "distillation loss",
    "opd/gate_mean": "gate mean",
    "opd/gate_active_ratio": "tokens with gate > 0.5",
    "opd/teacher_gap_mean": "teacher gap (nats)",
    "labels/optimal_share": "played actions optimal",
    "opd/gate_push": "gate push, optimal minus suboptimal",
    "opd/shift_auroc": "shift AUROC, optimal vs suboptimal",
    "losses/ppo": "PPO loss",
    "kl/ref": "KL to reference",
}
"""History column -> its label in the report, in the report's order."""
SHARES = {"rollout/success_rate", "opd/skill_parse_rate", "opd/distilled_sample_ratio", "opd/gate_active_ratio", "labels/optimal_share"}
"""Columns shown as percentages."""


def mechanism_markdown(history: pd.DataFrame, title: str = "The RL run's mechanism (per update)") -> str:
    """A markdown table, one row per update and a last row of means, of the
    ``MECHANISM_COLUMNS`` the history holds; "" when it holds none (no RL run logged them).

    Args:
        history: The training history (``update`` and the metrics' columns).
        title: The section's heading.
    """
    columns = [column for column in MECHANISM_COLUMNS if column in history.columns and history[column].notna().any()]
    if history.empty or not columns:
        return ""
    rows = history.sort_values("update") if "update" in history.columns else history.reset_index(drop=True)
    lines = [
        f"## {title}",
        "",
        "| update | " + " | ".join(MECHANISM_COLUMNS[c] for c in columns) + " |",
        "|---:|" + "---:|" * len(columns),
    ]
    for position, (_, row) in enumerate(rows.iterrows()):
        update = int(row["update"]) if "update" in rows.columns and pd.notna(row["update"]) else position
        lines.append(f"| {update} | " + " | ".join(_value(c, row[c]) for c in columns) + " |")
    lines.append("| mean | " + " | ".join(_value(c, rows[c].mean()) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _value(column: str, value) -> str:
    if pd.isna(value):
        return "-"
    if column in SHARES:
        return f"{100 * float(value):.1f}%"
    if column == "opd/gate_push":  # of the order of opd_coef times a gate difference
        return f"{float(value):+.2e}"
    return f"{float(value):.4f}"

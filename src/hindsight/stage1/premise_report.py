"""The premise check's summary table: its metrics as rows the stage's reporting dataset keeps.

``premise_summary`` turns ``stage1.premise.premise_metrics`` (with the controls' assignment
metrics of ``stage1.premise_controls`` and the copy test's of ``stage1.premise_copy``, where
logged) into one row per skill source, outcome and token set, each gap with its 95%
interval, and one row per paired comparison (``own_minus_<control>``,
``stage1.premise_paired``: the own skill minus a control, episode by episode on the same
tokens); a control's rows say what it held and changed (``note``: e.g. the share of
distinct unrelated texts), a control that is not applicable gets a row saying so instead of
no row, and the copy test a row of its own. ``ranking_summary`` does the same for the
ranking of SEED's shift on optimal actions (``stage1.premise_ranking``).
"""

from __future__ import annotations

import pandas as pd

from hindsight.stage1.premise_paired import PAIRED_TOKENS

SUMMARY_COLUMNS = (
    "skill_source", "outcome", "tokens_on", "episodes", "tokens", "gap_mean", "gap_low", "gap_high", "informative_share",
    "positive_share", "note",
)
"""``premise_summary``'s columns: one row per skill source, outcome (all, won, lost) and token
set (``tokens_on``: all, listed, unlisted, unsure), with the 95% interval over episodes; the
copy test's row (``skill_source`` copy, ``tokens_on`` pairs: its gap is per action, its
``tokens`` the pairs); ``note`` says what a control held and changed, or why it is not
applicable (a row of its own, no gap)."""

PAIRED_PREFIX = "own_minus_"
"""Rows ``own_minus_<control>``: ``stage1.premise_paired``'s paired differences."""

SAME_FORM_NOTE = "own skill, the step's named action replaced by another valid action of that step (steps the own skill names only)"


def _source_note(metrics: dict[str, float], prefix: str, source: str) -> str:
    """What a control's rows measured with (its assignment metrics), what a paired row
    subtracts, "" for other sources."""
    value = metrics.get
    if source.startswith(PAIRED_PREFIX):
        control = source[len(PAIRED_PREFIX):]
        where = "the steps the own skill names" if PAIRED_TOKENS[control] == "listed" else "every scored token"
        return f"paired: own minus {control}, per episode on the same tokens ({where}); positive_share: episodes where own is larger"
    if source == "unrelated" and f"{prefix}/unrelated/assigned" in metrics:
        return (f"own skill of another task, same outcome: {value(f'{prefix}/unrelated/assigned'):.0f} assigned, "
                f"distinct texts {value(f'{prefix}/unrelated/distinct_share'):.2f}, "
                f"another task type {value(f'{prefix}/unrelated/other_task_type_share'):.2f}")
    if source == "same_form":
        return SAME_FORM_NOTE
    if source == "shuffled" and f"{prefix}/shuffled/applicable_share" in metrics:
        return f"own skills with two distinct items or more: {value(f'{prefix}/shuffled/applicable_share'):.2f}"
    return ""


def _extra_rows(metrics: dict[str, float], prefix: str, sources: set[str]) -> list[dict]:
    """The summary rows that are not a source's gaps: the shuffled control where it is not
    applicable (no own skill with two distinct items), and the copy test."""
    nan = float("nan")
    blank = {"episodes": nan, "tokens": nan, "gap_mean": nan, "gap_low": nan, "gap_high": nan,
             "informative_share": nan, "positive_share": nan}
    rows = []
    if metrics.get(f"{prefix}/shuffled/applicable_share") == 0.0 and "shuffled" not in sources:
        rows.append({**blank, "skill_source": "shuffled", "outcome": "all", "tokens_on": "all",
                     "note": "not applicable: no own skill has two distinct items (no other order)"})
    for source, pairs_of in (("copy", "won steps"), ("copy_same_verb", "won steps, the two actions differing only in their last word")):
        copy = f"{prefix}/{source}"
        if f"{copy}/pairs" not in metrics or (source != "copy" and not metrics[f"{copy}/pairs"]):
            continue
        pairs = metrics[f"{copy}/pairs"]
        rows.append({
            **blank, "skill_source": source, "outcome": "won", "tokens_on": "pairs",
            "episodes": metrics.get(f"{copy}/episodes", nan), "tokens": pairs,
            "gap_mean": metrics.get(f"{copy}/gap_mean", nan), "gap_low": metrics.get(f"{copy}/gap_low", nan),
            "gap_high": metrics.get(f"{copy}/gap_high", nan), "positive_share": metrics.get(f"{copy}/positive_share", nan),
            "note": (f"log P(X | do: X) - log P(X | do: Y), nats per action: {pairs:.0f} pairs on "
                     f"{metrics.get(f'{copy}/steps', 0.0):.0f} {pairs_of}" if pairs else "not measured: no pair of valid actions on a won step"),
        })
    return rows


def premise_summary(metrics: dict[str, float], prefix: str = "premise") -> pd.DataFrame:
    """``premise_metrics`` (with the controls' and the copy test's metrics where logged) as a
    table (``SUMMARY_COLUMNS``), for the stage's reporting dataset."""
    rows = []
    for name, value in metrics.items():
        parts = name[len(prefix) + 1 :].split("/")
        if parts[-1] != "gap_mean" or len(parts) not in (3, 4):
            continue
        source, outcome = parts[0], parts[1]
        paired = source.startswith(PAIRED_PREFIX)
        side = parts[2] if len(parts) == 4 else PAIRED_TOKENS[source[len(PAIRED_PREFIX):]] if paired else "all"
        key = "/".join([prefix, *parts[:-1]])
        rows.append({
            "skill_source": source, "outcome": outcome, "tokens_on": side,
            "episodes": metrics.get(f"{prefix}/{source}/{outcome}/episodes", float("nan")),
            "tokens": metrics.get(f"{key}/tokens", float("nan")), "gap_mean": value,
            "gap_low": metrics.get(f"{key}/gap_low", float("nan")), "gap_high": metrics.get(f"{key}/gap_high", float("nan")),
            "informative_share": metrics.get(f"{prefix}/{source}/{outcome}/informative_share", float("nan")),
            "positive_share": metrics.get(f"{key}/positive_share", float("nan")),
            "note": _source_note(metrics, prefix, source),
        })
    rows += _extra_rows(metrics, prefix, {row["skill_source"] for row in rows})
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


RANKING_SUMMARY_COLUMNS = (
    "skill_source", "population", "subset", "episodes", "positives", "negatives", "auroc", "auroc_low", "auroc_high",
    "gate_push", "note",
)


def ranking_summary(metrics: dict[str, float], prefix: str = "premise", label_note: str = "") -> pd.DataFrame:
    """``ranking_metrics`` as a table (``RANKING_SUMMARY_COLUMNS``): one row per source,
    population and subset, and one per paired comparison (``own_minus_<control>``: its
    ``auroc`` is the difference); ``note`` names the labels and the interval."""
    nan = float("nan")
    key = f"{prefix}/ranking/"
    rows = []
    for name, value in metrics.items():
        if not name.startswith(key):
            continue
        parts = name[len(key):].split("/")
        if len(parts) != 4 or parts[-1] not in ("auroc", "difference"):
            continue
        source, population, subset, _ = parts
        cell = f"{key}{source}/{population}/{subset}"
        paired = parts[-1] == "difference"
        rows.append({
            "skill_source": source, "population": population, "subset": subset,
            "episodes": metrics.get(f"{cell}/episodes", nan), "positives": metrics.get(f"{cell}/positives", nan),
            "negatives": metrics.get(f"{cell}/negatives", nan), "auroc": value,
            "auroc_low": metrics.get(f"{cell}/low" if paired else f"{cell}/auroc_low", nan),
            "auroc_high": metrics.get(f"{cell}/high" if paired else f"{cell}/auroc_high", nan),
            "gate_push": metrics.get(f"{cell}/gate_push", nan),
            "note": (("paired: AUROC of own minus this control on the same actions; " if paired else "")
                     + "95% expanded-BCa bootstrap over episodes" + (f"; labels: {label_note}" if label_note else "")),
        })
    return pd.DataFrame(rows, columns=list(RANKING_SUMMARY_COLUMNS))


"""The premise check's paired comparisons: the own skill against each control on the same
tokens of the same episodes.

``premise.premise_metrics`` gives every skill source its own gap and interval, each source
resampled on its own stream; two sources whose intervals overlap may still differ, episode
by episode, by more than either interval says. The question the check asks ("does the own
skill's content move the policy more than a control's?") is a paired one, so this module
answers it directly: per episode, the own skill's mean gap minus the control's on the same
tokens, and the token-weighted mean of those differences with its 95% bootstrap interval
over episodes.

Which tokens a pair shares:

    same_form   the steps the own skill names (the control is scored on those steps only):
                own's ``listed_gap_mean`` against the control's ``gap_mean``, ``listed_tokens``
    rule, unrelated, shuffled
                every non-forced token of the episode (each source re-scores them all):
                ``gap_mean`` against ``gap_mean``, ``tokens``

Metrics (``paired_metrics``): ``<prefix>/own_minus_<control>/<label>/{gap_mean, gap_low,
gap_high, positive_share, episodes, tokens}``, label all, won or lost; ``positive_share`` is
the share of episodes where the own skill gave the larger gap.
"""

from __future__ import annotations

import math

import pandas as pd

from hindsight.algorithms.intervals import bootstrap_weighted_mean_interval, weighted_mean
from hindsight.stage1.premise import stream_seed

PAIRED_CONTROLS = {
    "same_form": ("listed_gap_mean", "gap_mean", "listed_tokens"),
    "rule": ("gap_mean", "gap_mean", "tokens"),
    "unrelated": ("gap_mean", "gap_mean", "tokens"),
    "shuffled": ("gap_mean", "gap_mean", "tokens"),
}
"""Control -> (own's column, the control's column, the weight column): the gaps on the tokens
both scored."""

PAIRED_TOKENS = {control: "listed" if weight == "listed_tokens" else "all" for control, (_, _, weight) in PAIRED_CONTROLS.items()}
"""Control -> the token set of its pair, as the summary's ``tokens_on`` names it."""


def paired_differences(table: pd.DataFrame, control: str) -> pd.DataFrame:
    """Per episode scored under both the own skill and ``control``: ``success``, ``own``,
    ``control``, ``difference`` (own minus control) and ``weight`` (the tokens both scored).
    Episodes where either gap is missing or no token is shared are left out."""
    own_column, control_column, weight_column = PAIRED_CONTROLS[control]
    own = table[table["skill_source"] == "own"].set_index("episode_id")
    other = table[table["skill_source"] == control].set_index("episode_id")
    shared = own.index.intersection(other.index)
    pairs = pd.DataFrame({
        "success": own.loc[shared, "success"].astype(bool),
        "own": own.loc[shared, own_column].astype(float),
        "control": other.loc[shared, control_column].astype(float),
        "weight": own.loc[shared, weight_column].astype(float),
    })
    pairs = pairs[pairs["own"].notna() & pairs["control"].notna() & (pairs["weight"] > 0)]
    return pairs.assign(difference=pairs["own"] - pairs["control"])


def paired_metrics(table: pd.DataFrame, prefix: str = "premise", seed: int = 0) -> dict[str, float]:
    """The own skill minus each control present in ``table`` (``premise.PREMISE_COLUMNS`` rows),
    overall and by outcome, each with its 95% bootstrap interval over episodes (its own
    stream: ``stream_seed(seed, "own_minus_<control>")``)."""
    metrics: dict[str, float] = {}
    present = set(table["skill_source"]) if len(table) else set()
    if "own" not in present:
        return metrics
    for control in [name for name in PAIRED_CONTROLS if name in present]:
        pairs = paired_differences(table, control)
        name = f"own_minus_{control}"
        for label, rows in (("all", pairs), ("won", pairs[pairs["success"]]), ("lost", pairs[~pairs["success"]])):
            if rows.empty:
                continue
            key = f"{prefix}/{name}/{label}"
            differences, weights = rows["difference"].tolist(), rows["weight"].tolist()
            mean = weighted_mean(differences, weights)
            if not math.isfinite(mean):
                continue
            metrics[f"{key}/gap_mean"] = mean
            metrics[f"{key}/gap_low"], metrics[f"{key}/gap_high"] = bootstrap_weighted_mean_interval(
                differences, weights, seed=stream_seed(seed, name)
            )
            metrics[f"{key}/positive_share"] = float((rows["difference"] > 0).mean())
            metrics[f"{key}/episodes"] = float(len(rows))
            metrics[f"{key}/tokens"] = float(rows["weight"].sum())
    return metrics

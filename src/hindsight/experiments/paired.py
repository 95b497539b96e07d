"""Each method of the grid paired against a baseline method over the same held-out tasks and seeds.

The grid keeps, per cell, the held-out episodes of the policy the run ended with (one row per
task, ``OUTCOME_COLUMNS``; the run's end policy: its last update's, or with
``training.rl.end_policy: best_seen`` its point best on seen tasks). For a method and a seed,
its cell and the baseline's cell (same seed, same task fraction) are each read at the decoding
picked on the **seen** split (``evaluation.paired_gain.best_decoding``: the unseen split takes
no part in any choice), then paired over the unseen tasks both played: method minus baseline
per task (won 1, lost 0). Over seeds the pairs are pooled: the mean over (seed, task) pairs
with a 95% percentile bootstrap interval resampling the pairs. A method separates from the
baseline only when that interval leaves 0.
"""

from __future__ import annotations

import pandas as pd

from hindsight.algorithms.intervals import bootstrap_weighted_mean_interval
from hindsight.evaluation.paired_gain import PICK_SPLIT, VERDICT_SPLIT, best_decoding, episode_outcomes

OUTCOME_COLUMNS = ["cell", "method", "seed", "fraction", "agent", "eval_split", "env", "task_type", "task_seed", "trial", "won"]
"""The grid's outcome table: one row per cell and held-out task of its end policy."""
_TASK = ["env", "task_type", "task_seed", "trial"]
PAIRED_COLUMNS = ["method", "seeds", "pairs", "mean", "low", "high", "method_success", "baseline_success", "method_only", "baseline_only", "decodings"]


def _picked(cell: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The cell's decoding picked on seen tasks, and its unseen episodes at that decoding."""
    renamed = cell.rename(columns={"task_seed": "seed"})
    decoding = best_decoding(renamed, "policy", PICK_SPLIT)
    played = cell[(cell["agent"] == f"policy-{decoding}") & (cell["eval_split"] == VERDICT_SPLIT)]
    return decoding, played[[*_TASK, "won"]]


def evaluation_outcomes(episodes: pd.DataFrame, method: str, seed: int, policy: str = "rl") -> pd.DataFrame:
    """The grid's outcome table (``OUTCOME_COLUMNS``) of one evaluation run outside the grid:
    the episodes of the agents ``<policy>-<decoding>`` (the evaluation pipeline's RL policy, or
    ``stage1`` for its start) as the cell ``<method>-<seed>``, so that standalone ``kedro run``s
    of several methods and seeds pair with ``paired_against`` as the grid's cells do.

    Raises:
        ValueError: The evaluation has no episodes of ``policy``.
    """
    played = episodes[episodes["agent"].astype(str).str.startswith(f"{policy}-")]
    if played.empty:
        raise ValueError(f"no episodes of agents {policy}-<decoding> (agents: {sorted(set(episodes['agent']))})")
    table = episode_outcomes(played).rename(columns={"seed": "task_seed"})
    table["agent"] = "policy-" + table["agent"].str.removeprefix(f"{policy}-")
    return table.assign(cell=f"{method}-{seed}", method=method, seed=seed, fraction=1.0)[OUTCOME_COLUMNS]


def paired_against(
    outcomes: pd.DataFrame, baseline: str = "grpo", fraction: float = 1.0, resamples: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """One row per method other than ``baseline`` with a seed the baseline also ran
    (``PAIRED_COLUMNS``): pooled (seed, task) pairs, the mean difference in success with its
    bootstrap interval, each side's success, the tasks only one side won, and the decodings
    picked per seed ("seed: method / baseline"). Empty without the baseline's outcomes."""
    rows = []
    at = outcomes[outcomes["fraction"] == fraction] if len(outcomes) else outcomes
    if at.empty or baseline not in set(at["method"]):
        return pd.DataFrame(columns=PAIRED_COLUMNS)
    for method in [m for m in dict.fromkeys(at["method"]) if m != baseline]:
        pairs, picks = [], []
        for run_seed in sorted(set(at.loc[at["method"] == method, "seed"]) & set(at.loc[at["method"] == baseline, "seed"])):
            ours, ours_played = _picked(at[(at["method"] == method) & (at["seed"] == run_seed)])
            theirs, theirs_played = _picked(at[(at["method"] == baseline) & (at["seed"] == run_seed)])
            pairs.append(ours_played.merge(theirs_played, on=_TASK, suffixes=("_method", "_baseline")))
            picks.append(f"{run_seed}: {ours} / {theirs}")
        if not pairs:
            continue
        joined = pd.concat(pairs, ignore_index=True)
        difference = (joined["won_method"] - joined["won_baseline"]).astype(float)
        low, high = bootstrap_weighted_mean_interval(difference.tolist(), [1.0] * len(difference), resamples=resamples, seed=seed)
        rows.append({
            "method": method, "seeds": len(pairs), "pairs": len(joined), "mean": float(difference.mean()), "low": low, "high": high,
            "method_success": float(joined["won_method"].mean()), "baseline_success": float(joined["won_baseline"].mean()),
            "method_only": int((difference > 0).sum()), "baseline_only": int((difference < 0).sum()), "decodings": "; ".join(picks),
        })
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS)


def paired_against_markdown(outcomes: pd.DataFrame, baseline: str = "grpo", fraction: float = 1.0) -> str:
    """The report's section: ``paired_against`` as a table with a verdict per method; "" when
    the grid kept no outcomes of the baseline."""
    table = paired_against(outcomes, baseline, fraction)
    if table.empty:
        return ""
    lines = [
        f"## Paired against {baseline} (unseen tasks, end policies, pooled over seeds)", "",
        f"Each cell at its decoding picked on seen tasks; per (seed, task): method minus {baseline} (won 1, lost 0); "
        "95% bootstrap interval over the pairs.", "",
        f"| method | seeds | pairs | method % | {baseline} % | difference, points (95% CI) | won only by the method / by {baseline} | verdict | decodings (seed: method / {baseline}) |",
        "|---|---:|---:|---:|---:|---|---|---|---|",
    ]
    for row in table.itertuples(index=False):
        verdict = "above" if row.low > 0 else "below" if row.high < 0 else "no separation"
        lines.append(
            f"| {row.method} | {row.seeds} | {row.pairs} | {100 * row.method_success:.1f} | {100 * row.baseline_success:.1f} | "
            f"{100 * row.mean:+.1f} ({100 * row.low:+.1f} to {100 * row.high:+.1f}) | {row.method_only} / {row.baseline_only} | {verdict} | {row.decodings} |"
        )
    return "\n".join(lines) + "\n"

"""The learning gain: did the RL policy win more held-out tasks than its start, on the same tasks?

The rule (docs/learning.md), from the held-out episode table of both policies (``evaluation.heldout``):

1. Each policy's decoding is picked on the **seen** split only: the decoding (agent suffix,
   ``HeldoutPlay.decodings``) with the highest success there (``best_decoding``); ties go to
   greedy first, then to the lower temperature (``decoding_order``). The unseen split never
   takes part in the pick, so a decoding that happens to do well there is not chosen for it.
2. The two picked agents are paired over the tasks both played (env, task type, seed, trial)
   of a split: per task, end minus start (won 1, lost 0); the gain is the mean over tasks with
   a 95% percentile bootstrap interval resampling tasks (``paired_gain``).
3. A gain is shown only when the interval on the **unseen** split lies above 0
   (``learning_gain_markdown``); the seen row is for information.

``learning_gain_section`` gives the evaluation report its section and the metrics
``gain/<split>/{mean,low,high}``, or nothing when either policy lacks a decoding played on both
seen and unseen.
"""

from __future__ import annotations

import math
import re
from typing import Mapping

import pandas as pd

from hindsight.algorithms.intervals import bootstrap_weighted_mean_interval
from hindsight.data.outcomes import episode_outcomes as step_outcomes
from hindsight.evaluation.metrics import percent_interval, wilson_interval

TASK_KEYS = ["env", "task_type", "seed", "trial"]
"""What makes two agents' episodes the same task: the game, the task seed and the trial."""
OUTCOME_KEYS = ["agent", "eval_split", *TASK_KEYS]
GAIN_SPLITS = ("unseen", "seen")
"""The splits of the learning-gain table, in order: unseen decides, seen is for information."""
PICK_SPLIT = "seen"
VERDICT_SPLIT = "unseen"
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def episode_outcomes(episodes: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, eval_split, env, task_type, seed, trial) with ``won`` 0/1: won when
    any of the episode's steps is (``hindsight.data.outcomes.episode_outcomes``).

    Raises:
        ValueError: An agent played one task twice in one split and trial.
    """
    outcomes = step_outcomes(episodes, OUTCOME_KEYS)
    outcomes = outcomes[OUTCOME_KEYS].assign(won=outcomes["success"].astype(int))
    repeated = outcomes[outcomes.duplicated(OUTCOME_KEYS, keep=False)]
    if not repeated.empty:
        agents = sorted(repeated["agent"].astype(str).unique())
        raise ValueError(f"agent(s) {agents} played a task more than once in one split and trial: no pairing is possible")
    return outcomes.reset_index(drop=True)


def decoding_order(name: str, temperatures: Mapping[str, float] | None = None) -> tuple:
    """The tie order of a decoding name: greedy first, then the lower temperature, then the
    name. The temperature is ``temperatures[name]`` when given, else 0 for "greedy", else the
    last number in the name ("t0.2", "sampled-0.7"); a name with none comes after all others."""
    if temperatures and name in temperatures:
        temperature = float(temperatures[name])
    elif name == "greedy":
        temperature = 0.0
    else:
        numbers = _NUMBER.findall(name)
        temperature = float(numbers[-1]) if numbers else math.inf
    return (name != "greedy", temperature, name)


def decodings_of(outcomes: pd.DataFrame, policy_label: str, split: str) -> list[str]:
    """The decodings (agent ``<policy_label>-<decoding>``) of a policy played on ``split``."""
    prefix = f"{policy_label}-"
    agents = outcomes.loc[outcomes["eval_split"] == split, "agent"].astype(str).unique()
    return sorted(agent[len(prefix):] for agent in agents if agent.startswith(prefix))


def best_decoding(
    outcomes: pd.DataFrame, policy_label: str, split: str = PICK_SPLIT, temperatures: Mapping[str, float] | None = None
) -> str:
    """The decoding of ``policy_label`` with the highest success on ``split`` (seen: the pick
    never looks at unseen); ties broken by ``decoding_order`` (greedy, then the lower temperature).

    Raises:
        ValueError: The policy played no decoding on ``split``.
    """
    names = decodings_of(outcomes, policy_label, split)
    if not names:
        raise ValueError(f'policy "{policy_label}" played no decoding on the "{split}" split: nothing to pick from')
    played = outcomes[outcomes["eval_split"] == split]
    rates = {name: played.loc[played["agent"] == f"{policy_label}-{name}", "won"].mean() for name in names}
    return min(names, key=lambda name: (-rates[name], decoding_order(name, temperatures)))


def paired_gain(
    outcomes: pd.DataFrame, start_agent: str, end_agent: str, split: str = VERDICT_SPLIT, resamples: int = 2000, seed: int = 0
) -> dict:
    """End minus start over the tasks of ``split`` both agents played.

    Returns:
        ``tasks``; ``mean`` (end - start success, averaged over tasks) with ``low`` / ``high``,
        its 95% percentile bootstrap interval over tasks (``resamples``, ``seed``); each agent's
        success with its Wilson 95% interval (``start_success``, ``start_low``, ...); tasks won
        only by the end agent (``end_only``) and only by the start agent (``start_only``).

    Raises:
        ValueError: The two agents share no task on ``split``.
    """
    played = outcomes[outcomes["eval_split"] == split]
    start = played.loc[played["agent"] == start_agent, [*TASK_KEYS, "won"]]
    end = played.loc[played["agent"] == end_agent, [*TASK_KEYS, "won"]]
    pairs = start.merge(end, on=TASK_KEYS, suffixes=("_start", "_end"))
    if pairs.empty:
        raise ValueError(
            f'agents "{start_agent}" and "{end_agent}" share no task on the "{split}" split '
            f"({len(start)} and {len(end)} episodes): no paired gain"
        )
    difference = (pairs["won_end"] - pairs["won_start"]).astype(float)
    low, high = bootstrap_weighted_mean_interval(difference.tolist(), [1.0] * len(difference), resamples=resamples, seed=seed)
    tasks = len(pairs)
    result = {"split": split, "start_agent": start_agent, "end_agent": end_agent, "tasks": tasks,
              "mean": float(difference.mean()), "low": low, "high": high}
    for side in ("start", "end"):
        wins = int(pairs[f"won_{side}"].sum())
        result[f"{side}_success"] = wins / tasks
        result[f"{side}_low"], result[f"{side}_high"] = wilson_interval(wins, tasks)
    result["end_only"] = int((difference > 0).sum())
    result["start_only"] = int((difference < 0).sum())
    return result


def learning_gain_table(
    episodes: pd.DataFrame, start_label: str = "stage1", end_label: str = "rl", resamples: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """The whole rule: each policy's decoding picked on seen (``best_decoding``), then the
    paired gain of the picked agents (``paired_gain``) on unseen and, for information, seen:
    one row per split played by both, with ``start_decoding`` / ``end_decoding`` naming the picks."""
    outcomes = episode_outcomes(episodes)
    start, end = best_decoding(outcomes, start_label), best_decoding(outcomes, end_label)
    rows = []
    for split in GAIN_SPLITS:
        if start in decodings_of(outcomes, start_label, split) and end in decodings_of(outcomes, end_label, split):
            gain = paired_gain(outcomes, f"{start_label}-{start}", f"{end_label}-{end}", split, resamples, seed)
            rows.append({**gain, "start_decoding": start, "end_decoding": end})
    return pd.DataFrame(rows)


def verdict(table: pd.DataFrame) -> str:
    """One line: "gain above 0" only when the unseen row's interval starts above 0, "a loss"
    when it ends below 0, else "no gain shown"."""
    rows = table[table["split"] == VERDICT_SPLIT] if "split" in table else table.iloc[0:0]
    if rows.empty:
        return "Verdict: no unseen split was played by both policies, so no learning gain is judged."
    row = rows.iloc[0]
    interval = f"{100 * row['mean']:+.1f} points, 95% CI {100 * row['low']:+.1f} to {100 * row['high']:+.1f}"
    if row["low"] > 0:
        return f"Verdict: gain above 0 on unseen ({row['end_agent']} vs {row['start_agent']}: {interval})."
    if row["high"] < 0:
        return f"Verdict: a loss on unseen ({row['end_agent']} vs {row['start_agent']}: {interval}; the interval lies below 0)."
    return f"Verdict: no gain shown on unseen ({row['end_agent']} vs {row['start_agent']}: {interval}; the interval reaches 0)."


def learning_gain_markdown(table: pd.DataFrame) -> str:
    """The report section: the rule in a sentence, one row per split, and the verdict line."""
    lines = [
        "## Learning gain (paired over the same tasks)",
        "",
        "Each policy plays its decoding with the highest success on seen (picked on seen only; ties: greedy, then the "
        "lower temperature). Gain: end minus start per task, in points, with a 95% bootstrap interval over tasks.",
        "",
        "| split | start | end | tasks | start % (95% CI) | end % (95% CI) | gain, points (95% CI) | won only by end | won only by start |",
        "|---|---|---|---:|---|---|---|---:|---:|",
    ]
    for row in table.itertuples(index=False):
        lines.append(
            f"| {row.split} | {row.start_agent} | {row.end_agent} | {row.tasks} | "
            f"{percent_interval(row.start_success, row.start_low, row.start_high)} | "
            f"{percent_interval(row.end_success, row.end_low, row.end_high)} | "
            f"{100 * row.mean:+.1f} ({100 * row.low:+.1f} to {100 * row.high:+.1f}) | {row.end_only} | {row.start_only} |"
        )
    return "\n".join([*lines, "", verdict(table)]) + "\n"


def gain_metrics(table: pd.DataFrame) -> dict[str, float]:
    """``gain/<split>/{mean,low,high}`` of every row."""
    return {f"gain/{row.split}/{stat}": float(getattr(row, stat)) for row in table.itertuples(index=False) for stat in ("mean", "low", "high")}


def learning_gain_section(episodes: pd.DataFrame, start_label: str = "stage1", end_label: str = "rl") -> tuple[str, dict[str, float]]:
    """The evaluation report's learning-gain section and its metrics, or ``("", {})`` unless
    both policies played at least one decoding on both seen and unseen."""
    if episodes.empty or not {*OUTCOME_KEYS, "won"} <= set(episodes.columns):
        return "", {}
    agents = episodes[["agent", "eval_split"]].drop_duplicates()
    for label in (start_label, end_label):
        for split in (PICK_SPLIT, VERDICT_SPLIT):
            if not decodings_of(agents, label, split):
                return "", {}
    table = learning_gain_table(episodes, start_label, end_label)
    if table.empty:
        return "", {}
    return learning_gain_markdown(table), gain_metrics(table)

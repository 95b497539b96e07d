"""pass^k of held-out evaluation episodes: per agent and split, by task type and by fault family.

Input is the evaluation step table (``heldout.evaluate_agents``: ``agent``, ``eval_split``,
``group_id`` naming the task, ``trial``). A task's trials are its episodes of one agent on
one split; from its n trials with c successes, pass^k = C(c, k) / C(n, k)
(``algorithms.pass_k``), for k = 1..n. Every task of the table must have the same number of
trials n, as in tau2-bench: a table where one has fewer (an episode lost to an environment
failure) is refused with an error naming it, rather than averaging pass^k over a task set
that shrinks with k. The benchmark's pass^k is the mean over the tasks, with a 95%
percentile bootstrap interval over tasks (``algorithms.intervals``, every task weight 1).

Breakdowns (column ``breakdown``): ``task_type`` (each task type / game, and ``all``), and
whatever labels the environment's analysis interface gives a task (``task_labels``): the
dual-control domain (``hindsight.envs.dual_control.analysis``) names its ``intent`` (mobile
data, slow data, MMS, out of scope), its ``outcome`` (fix or transfer), its number of
``issues`` (faults, 1-4), its user's ``persona`` (easy, hard) and its ``fault`` families (a
task counts under each of its faults).
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from hindsight.algorithms.intervals import bootstrap_weighted_mean_interval
from hindsight.algorithms.pass_k import pass_hat_k
from hindsight.data.outcomes import episode_outcomes
from hindsight.evaluation.metrics import percent_interval

PASS_K_COLUMNS = ["agent", "eval_split", "breakdown", "group", "k", "tasks", "pass_k", "ci_low", "ci_high"]
"""Columns of ``pass_k_summary``."""
TASK_KEYS = ["agent", "eval_split", "env", "task_type", "split", "seed", "group_id"]


BREAKDOWNS: tuple[str, ...] = ("task_type", "intent", "outcome", "issues", "persona", "fault")
"""The breakdowns in report order."""


def _dual_control_labels(split: str, seed: int) -> dict[str, tuple[str, ...]]:
    from hindsight.envs.dual_control.analysis import task_labels as dual_control_labels

    return dual_control_labels(split, int(seed))


TASK_LABELS: dict[str, Callable[[str, int], dict[str, tuple[str, ...]]]] = {"dual_control": _dual_control_labels}
"""Environment family -> (split, seed) -> breakdown -> the task's groups in it."""


def task_labels(env: str, split: str, seed: int) -> dict[str, tuple[str, ...]]:
    """The breakdown labels of task ``seed`` of fold ``split`` (empty where ``env`` has none)."""
    reader = TASK_LABELS.get(env)
    return reader(split, seed) if reader else {}


def fault_families(env: str, split: str, seed: int) -> tuple[str, ...]:
    """The fault families of task ``seed`` of fold ``split`` (empty where ``env`` has none)."""
    return task_labels(env, split, seed).get("fault", ())


def task_trials(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, held-out split, task): ``TASK_KEYS``, ``trials`` and ``successes``."""
    outcomes = episode_outcomes(steps, TASK_KEYS)
    grouped = outcomes.groupby(TASK_KEYS, sort=True, dropna=False)["success"]
    return grouped.agg(trials="size", successes="sum").reset_index()


def check_equal_trials(tasks: pd.DataFrame) -> int:
    """The number of trials every task of ``task_trials`` has.

    Raises:
        ValueError: Two tasks have different numbers of trials; the message names the first
            task with fewer trials than the most any task has.
    """
    counts = tasks["trials"].astype(int)
    most = int(counts.max())
    short = tasks[counts < most]
    if not short.empty:
        row = short.iloc[0]
        raise ValueError(
            f"pass^k needs the same number of trials for every task: {len(short)} of {len(tasks)} task(s) have fewer "
            f"than {most}, e.g. agent {row['agent']!r}, split {row['eval_split']!r}, task {row['group_id']!r} with "
            f"{int(row['trials'])} (an episode missing from the table, e.g. lost to an environment failure). "
            "Re-run the evaluation, or compute pass^k on a table where every task has all its trials."
        )
    return most


def _rows(tasks: pd.DataFrame, labels: dict, max_k: int, resamples: int, seed: int) -> list[dict]:
    rows = []
    for k in range(1, max_k + 1):
        values = [pass_hat_k(int(c), int(n), k) for c, n in zip(tasks["successes"], tasks["trials"])]
        if not values:
            continue
        low, high = bootstrap_weighted_mean_interval(values, [1.0] * len(values), resamples=resamples, seed=seed)
        rows.append({**labels, "k": k, "tasks": len(values), "pass_k": sum(values) / len(values), "ci_low": low, "ci_high": high})
    return rows


def pass_k_summary(steps: pd.DataFrame, max_k: int | None = None, *, resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """pass^1..pass^K per agent and held-out split, by task type and the environment's labels.

    Args:
        steps: Evaluation step rows (see the module docstring).
        max_k: Largest k (None: the trials every task has).
        resamples: Bootstrap resamples of each interval.
        seed: Seed of the resampling.

    Returns:
        A table with the ``PASS_K_COLUMNS`` (empty when there is no episode).

    Raises:
        ValueError: The tasks have unequal numbers of trials (``check_equal_trials``), or
            ``max_k`` exceeds the trials.
    """
    if steps.empty:
        return pd.DataFrame(columns=PASS_K_COLUMNS)
    tasks = task_trials(steps)
    trials = check_equal_trials(tasks)
    max_k = trials if max_k is None else int(max_k)
    if not 1 <= max_k <= trials:
        raise ValueError(f"pass^k needs 1 <= max_k <= the trials per task ({trials}), got max_k={max_k}.")
    labels_of = {
        (env, split, int(seed)): task_labels(env, split, int(seed))
        for env, split, seed in set(zip(tasks["env"], tasks["split"], tasks["seed"]))
    }
    rows: list[dict] = []
    for (agent, eval_split), part in tasks.groupby(["agent", "eval_split"], sort=True):
        labels = {"agent": agent, "eval_split": eval_split}
        for task_type, group in part.groupby("task_type", sort=True):
            rows += _rows(group, {**labels, "breakdown": "task_type", "group": task_type}, max_k, resamples, seed)
        rows += _rows(part, {**labels, "breakdown": "task_type", "group": "all"}, max_k, resamples, seed)
        task_labels_ = [labels_of[(env, split, int(s))] for env, split, s in zip(part["env"], part["split"], part["seed"])]
        for breakdown in BREAKDOWNS[1:]:
            groups = [found.get(breakdown, ()) for found in task_labels_]
            for group in sorted({name for names in groups for name in names}):
                members = part[[group in names for names in groups]]
                rows += _rows(members, {**labels, "breakdown": breakdown, "group": group}, max_k, resamples, seed)
    return pd.DataFrame(rows, columns=PASS_K_COLUMNS)


def pass_k_metrics(summary: pd.DataFrame) -> dict[str, float]:
    """MLflow metrics of a ``pass_k_summary``: ``eval/{agent}/{split}/{task type}/pass_hat_{k}``,
    and ``eval/{agent}/{split}/{breakdown}_{group}/pass_hat_{k}`` for the other breakdowns
    (``fault_apn``, ``intent_mms``, ``persona_hard``)."""
    metrics = {}
    for row in summary.itertuples(index=False):
        group = row.group if row.breakdown == "task_type" else f"{row.breakdown}_{row.group}"
        metrics[f"eval/{row.agent}/{row.eval_split}/{group}/pass_hat_{row.k}"] = float(row.pass_k)
    return metrics


def pass_k_markdown(summary: pd.DataFrame, title: str | None = None) -> str:
    """A markdown table: one row per agent, split and group, pass^1..pass^K as percentages
    with their 95% bootstrap intervals over tasks."""
    lines = [f"## {title}", ""] if title else []
    if summary.empty:
        return "\n".join(lines + ["(no episodes)"]) + "\n"
    ks = sorted(int(k) for k in summary["k"].unique())
    lines.append("| agent | split | breakdown | group | tasks | " + " | ".join(f"pass^{k} % (95% CI)" for k in ks) + " |")
    lines.append("|---|---|---|---|---:|" + "---|" * len(ks))
    rank = {name: position for position, name in enumerate(BREAKDOWNS)}
    order = summary.assign(_all=summary["group"].eq("all"), _fault=summary["breakdown"].map(lambda b: rank.get(b, len(rank))))
    keys = ["agent", "eval_split", "_fault", "_all", "group"]
    for (agent, split, _, _, group), rows in order.groupby(keys, sort=True):
        by_k = rows.set_index("k")
        cells = []
        for k in ks:
            if k in by_k.index:
                row = by_k.loc[k]
                cells.append(percent_interval(row["pass_k"], row["ci_low"], row["ci_high"]))
            else:
                cells.append("-")
        breakdown = rows["breakdown"].iloc[0]
        lines.append(f"| {agent} | {split} | {breakdown} | {group} | {int(by_k['tasks'].max())} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

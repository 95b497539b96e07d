"""Nodes of the evaluation pipeline: thin wrappers over ``hindsight.evaluation``."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pandas as pd

from hindsight import tracking
from hindsight.config import EvaluationConfig, ProjectConfig
from hindsight.envs import make_env
from hindsight.evaluation.curves import curves_markdown
from hindsight.evaluation.filmstrip import write_filmstrips
from hindsight.evaluation.gold_floor import with_gold_reference
from hindsight.evaluation.heldout import MISSING_ATTR, evaluate_agents
from hindsight.evaluation.mechanism import mechanism_markdown
from hindsight.evaluation.paired_gain import learning_gain_section
from hindsight.evaluation.metrics import success_summary
from hindsight.evaluation.pass_k import PASS_K_COLUMNS, pass_k_markdown, pass_k_metrics, pass_k_summary
from hindsight.evaluation.report import markdown_table, success_plot
from hindsight.policy import Policy

logger = logging.getLogger(__name__)


def _evaluate(policy: Policy, label: str, include_random: bool, project: ProjectConfig, evaluation: EvaluationConfig) -> pd.DataFrame:
    heldout = project.heldout_config(evaluation.heldout)
    return evaluate_agents(
        policy, project.specs(), make_env, project.rollout_config(), heldout, policy_label=label, include_random=include_random
    )


def evaluate_stage1_policy(policy: Policy, project: ProjectConfig, evaluation: EvaluationConfig) -> pd.DataFrame:
    """Held-out episodes of the Stage-1 checkpoint (agent "stage1-*"), of the random floor
    and, on the dual-control domain, of the gold solver (``hindsight.evaluation.gold_floor``)."""
    episodes = _evaluate(policy, "stage1", evaluation.random_floor, project, evaluation)
    if not evaluation.random_floor:
        return episodes
    return with_gold_reference(episodes, project.specs(), make_env, project.heldout_config(evaluation.heldout))


def evaluate_rl_policy(policy: Policy, project: ProjectConfig, evaluation: EvaluationConfig) -> pd.DataFrame:
    """Held-out episodes of the RL checkpoint (agent "rl-*")."""
    return _evaluate(policy, "rl", False, project, evaluation)


def headline_summary(summary: pd.DataFrame) -> str:
    """One line per split: every agent's success over all held-out task types."""
    rows = summary[summary["task_type"] == "all"]
    lines = []
    for split, group in rows.groupby("eval_split"):
        parts = [
            f"{row.agent} {100 * row.success_rate:.1f}% (95% CI {100 * row.ci_low:.1f}-{100 * row.ci_high:.1f}, n={row.episodes})"
            for row in group.itertuples(index=False)
        ]
        lines.append(f"Held-out success, {split}: " + "; ".join(parts))
    return "\n".join(lines)


def pass_k_headline(pass_k: pd.DataFrame) -> str:
    """One line per split: every agent's pass^1..pass^K over all task types."""
    rows = pass_k[(pass_k["breakdown"] == "task_type") & (pass_k["group"] == "all")]
    lines = []
    for split, group in rows.groupby("eval_split"):
        parts = [
            f"{agent} " + " ".join(f"{100 * value:.1f}" for value in agent_rows.sort_values("k")["pass_k"])
            for agent, agent_rows in group.groupby("agent")
        ]
        ks = sorted(int(k) for k in group["k"].unique())
        lines.append(f"Held-out pass^{ks[0]}..{ks[-1]} %, {split}: " + "; ".join(parts))
    return "\n".join(lines)


def missing_episodes_line(missing: dict[str, int]) -> str:
    """The report's line on planned episodes missing from the table (by agent/split)."""
    parts = ", ".join(f"{where} {count}" for where, count in sorted(missing.items()))
    return (
        f"Missing: {sum(missing.values())} planned episode(s) are not in this table (their environment "
        f"failed on every try; faults/failed_episodes): {parts}."
    )


def pass_k_or_refusal(episodes: pd.DataFrame, missing: dict[str, int]) -> tuple[pd.DataFrame, str]:
    """The pass^k table and "", or, where episodes given up after their replays left tasks
    with fewer trials than the others (``missing``), an empty table and the refusal: pass^k is
    not reported over a task set that shrinks with k (``evaluation.pass_k``). Unequal trial
    counts with no episode recorded missing raise."""
    try:
        return pass_k_summary(episodes), ""
    except ValueError as error:
        if not missing or "same number of trials" not in str(error):
            raise
        logger.warning("No pass^k for this evaluation: %s", error)
        return pd.DataFrame(columns=PASS_K_COLUMNS), f"No pass^k: {error}"


def report_evaluation(stage1_episodes: pd.DataFrame, rl_episodes: pd.DataFrame, training_history: pd.DataFrame | None = None):
    """Success table (markdown), summary (csv), pass^k table (csv) and plot; metrics to
    MLflow; a summary printed at the end of the run. The markdown, the metrics and the summary
    also carry pass^1..pass^k by task type, k up to ``evaluation.heldout.trials_per_task``
    (``evaluation.pass_k``; with one trial per task, pass^1), the same way on every environment. The markdown ends with the RL run's
    mechanism per update from ``training_history`` (``evaluation.mechanism``: SEED's parse
    rate, distillation loss and gate), then its held-out curve (success with its Wilson 95%
    interval at every evaluated update, per split and decoding; or a line saying none was
    evaluated) and its health per update (``evaluation.curves``), and last, when both policies
    played seen and unseen, the learning gain: each policy's decoding picked on seen, RL minus
    Stage 1 paired over the same tasks with a bootstrap interval and a verdict on unseen
    (``evaluation.paired_gain``; metrics ``gain/<split>/{mean,low,high}``).

    Returns:
        (episodes of all agents, summary table, pass^k table, markdown text, matplotlib figure).
    """
    missing = {**stage1_episodes.attrs.get(MISSING_ATTR, {}), **rl_episodes.attrs.get(MISSING_ATTR, {})}
    episodes = pd.concat([stage1_episodes, rl_episodes], ignore_index=True)
    summary = success_summary(episodes)
    pass_k, refusal = pass_k_or_refusal(episodes, missing)
    has_pass_k = len(pass_k) > 0
    families = sorted(episodes["env"].dropna().unique()) if "env" in episodes else []
    text = markdown_table(summary, title=f"Held-out success ({', '.join(families) or 'no episodes'})")
    if has_pass_k:
        text += "\n" + pass_k_markdown(pass_k, title="Held-out pass^k (all k trials of a task succeed; 95% bootstrap over tasks)")
    if missing:  # given up after their replays (rollout.replay): the rates above stand on fewer episodes
        text += "\n" + missing_episodes_line(missing) + "\n"
    if refusal:
        text += "\n" + refusal + "\n"
    if training_history is not None and not training_history.empty:
        mechanism = mechanism_markdown(training_history)
        text += "\n" + mechanism if mechanism else ""
        text += "\n" + curves_markdown(training_history)
    gain_text, gain_metrics = learning_gain_section(episodes)
    text += "\n" + gain_text if gain_text else ""
    figure = success_plot(summary)
    metrics = {
        f"eval/{row.agent}/{row.eval_split}/{row.task_type}/success_rate": row.success_rate
        for row in summary.itertuples(index=False)
    }
    metrics["eval/missing_episodes"] = float(sum(missing.values()))
    if has_pass_k:
        metrics.update(pass_k_metrics(pass_k))
    metrics.update(gain_metrics)
    tracking.log_metrics(metrics)
    headline = headline_summary(summary)
    if has_pass_k:
        headline += "\n" + pass_k_headline(pass_k)
    logger.info("\n%s\n%s", text, headline)
    print("\n" + text + "\n" + headline, flush=True)
    return episodes, summary, pass_k, text, figure


def log_filmstrips(episodes: pd.DataFrame, project: ProjectConfig, evaluation: EvaluationConfig) -> None:
    """``evaluation.filmstrips`` episodes per agent as filmstrips in MLflow
    (``filmstrips/<agent>/<episode>.png``): each step's screen with its action drawn, made by
    replaying the episode on a fresh environment (``hindsight.evaluation.filmstrip``). Games
    that render no screen (every text environment) get none, and nothing is built for them."""
    with tempfile.TemporaryDirectory() as folder:
        specs = [*project.specs(), *project.environment.heldout_specs()]  # the unseen task types too
        paths = write_filmstrips(episodes, specs, make_env, evaluation.filmstrips, Path(folder))
        for path in paths:
            tracking.log_artifact(path, artifact_path=f"filmstrips/{path.parent.name}")
    if paths:
        logger.info("Logged %d filmstrip(s) to MLflow under filmstrips/", len(paths))

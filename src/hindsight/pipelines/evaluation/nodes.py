"""Nodes of the evaluation pipeline: thin wrappers over ``hindsight.evaluation``."""

from __future__ import annotations

import logging

import pandas as pd

from hindsight import tracking
from hindsight.config import EvaluationConfig, ProjectConfig
from hindsight.envs import make_env
from hindsight.evaluation.heldout import evaluate_agents
from hindsight.evaluation.metrics import success_summary
from hindsight.evaluation.report import markdown_table, success_plot
from hindsight.policy import Policy

logger = logging.getLogger(__name__)


def _evaluate(policy: Policy, label: str, include_random: bool, project: ProjectConfig, evaluation: EvaluationConfig) -> pd.DataFrame:
    heldout = project.heldout_config(evaluation.heldout, random_floor=evaluation.random_floor)
    return evaluate_agents(
        policy, project.specs(), make_env, project.rollout_config(), heldout, policy_label=label, include_random=include_random
    )


def evaluate_stage1_policy(policy: Policy, project: ProjectConfig, evaluation: EvaluationConfig) -> pd.DataFrame:
    """Held-out episodes of the Stage-1 checkpoint (agent "stage1-*") and of the random floor."""
    return _evaluate(policy, "stage1", evaluation.random_floor, project, evaluation)


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


def report_evaluation(stage1_episodes: pd.DataFrame, rl_episodes: pd.DataFrame):
    """Success table (markdown), summary (parquet) and plot; metrics to MLflow; a summary
    printed at the end of the run.

    Returns:
        (episodes of all agents, summary table, markdown text, matplotlib figure).
    """
    episodes = pd.concat([stage1_episodes, rl_episodes], ignore_index=True)
    summary = success_summary(episodes)
    families = sorted(episodes["env"].dropna().unique()) if "env" in episodes else []
    text = markdown_table(summary, title=f"Held-out success ({', '.join(families) or 'no episodes'})")
    figure = success_plot(summary)
    tracking.log_metrics(
        {
            f"eval/{row.agent}/{row.eval_split}/{row.task_type}/success_rate": row.success_rate
            for row in summary.itertuples(index=False)
        }
    )
    headline = headline_summary(summary)
    logger.info("\n%s\n%s", text, headline)
    print("\n" + text + "\n" + headline, flush=True)
    return episodes, summary, text, figure

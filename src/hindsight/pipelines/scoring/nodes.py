"""Nodes of the scoring pipeline: thin wrappers over ``hindsight.training.distillation``."""

from __future__ import annotations

import logging
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hindsight import tracking  # noqa: E402
from hindsight.config import ProjectConfig, ScoringConfig  # noqa: E402
from hindsight.policy import Policy  # noqa: E402
from hindsight.policy.table_samples import refuse_policy_that_sees, samples_from_table  # noqa: E402
from hindsight.training.distillation import response_logprobs, scores_table, skill_augmented_logprobs  # noqa: E402

logger = logging.getLogger(__name__)


def score_distillation_signals(
    trajectories: pd.DataFrame,
    skills: pd.DataFrame,
    policy: Policy,
    project: ProjectConfig,
    scoring: ScoringConfig,
) -> pd.DataFrame:
    """Token-level ``logp_plain``, ``logp_skill``, gap and gate of every step whose episode
    has a parsed skill, under the same decoding rule the actor used. A policy that sees is
    refused (the rollout table keeps no screens: ``table_samples.refuse_policy_that_sees``).

    Returns:
        The scores table (``hindsight.training.distillation.SCORES_COLUMNS``): episode_id, step,
        token_index, token, logp_plain, logp_skill, gap, gate.
    """
    refuse_policy_that_sees(
        policy, "the scoring pipeline (skill_rollouts)", "score a policy that sees inside the RL update, whose rollouts carry their screens"
    )
    parsed = skills[skills["parse_ok"]]
    skill_of = dict(zip(parsed["episode_id"], parsed["skill"]))
    table = trajectories[trajectories["episode_id"].isin(skill_of)]
    if table.empty:
        raise ValueError("scoring: no trajectory of the table has a parsed skill (check 'skills' against the trajectories)")
    samples = samples_from_table(
        table,
        policy.tokenizer,
        project.rollout.prompt,
        constrained=project.rollout.sampling.constrained,
        max_length=scoring.max_length,
    )
    batch_size = scoring.batch_size
    plain = response_logprobs(policy.model, samples, batch_size, policy.tokenizer.pad_token_id)
    skill = skill_augmented_logprobs(policy.model, policy.tokenizer, samples, skill_of, batch_size)
    scores = scores_table(samples, plain, skill, policy.tokenizer, gate_beta=scoring.gate_beta)
    tracking.log_metrics(
        {
            "scoring/gate_mean": float(scores["gate"].mean()),
            "scoring/gate_active_ratio": float((scores["gate"] > 0.5).mean()),
            "scoring/teacher_gap_mean": float(scores["gap"].mean()),
            "scoring/tokens": float(len(scores)),
        }
    )
    logger.info("Scored %d tokens of %d steps: gate mean %.3f", len(scores), len(samples), scores["gate"].mean())
    return scores


def plot_gate_distribution(scores: pd.DataFrame, trajectories: pd.DataFrame):
    """Histogram of the gate per task type."""
    task_type = trajectories.drop_duplicates("episode_id").set_index("episode_id")["task_type"]
    scores = scores.assign(task_type=scores["episode_id"].map(task_type))
    types = sorted(scores["task_type"].dropna().unique())
    figure, axes = plt.subplots(1, max(len(types), 1), figsize=(4.5 * max(len(types), 1), 3.4), squeeze=False, sharey=True)
    for axis, kind in zip(axes[0], types):
        values = scores.loc[scores["task_type"] == kind, "gate"]
        axis.hist(values, bins=20, range=(0, 1))
        axis.set_title(f"{kind}: gate (mean {values.mean():.2f}, n={len(values)})")
        axis.set_xlabel("sigmoid(beta * (logp_skill - logp_plain))")
    axes[0][0].set_ylabel("tokens")
    figure.tight_layout()
    return figure

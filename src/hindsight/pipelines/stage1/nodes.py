"""Nodes of the Stage-1 stage: the mixture and its SFT run.

Stage 1 continues from the base policy on a mixture: the same behaviour cloning,
skill-conditioned behaviour cloning (expert steps with their episode's hindsight skill
injected into the prompt, so the policy learns to use a skill) and analyzer SFT (analysis
prompt -> JSON, so the policy can write skills). The Stage-1 checkpoint starts RL and is
its KL reference.
"""

from __future__ import annotations

import logging

import pandas as pd

from hindsight import tracking
from hindsight.config import ProjectConfig, Stage1Config
from hindsight.pipelines.behaviour_cloning.nodes import log_prefixed
from hindsight.skills.injection import inject_skill
from hindsight.training.sft import train_sft

logger = logging.getLogger(__name__)


def stage1_examples(
    bc_examples: pd.DataFrame, skills: pd.DataFrame, analyzer_sft_set: pd.DataFrame, settings: Stage1Config
) -> pd.DataFrame:
    """The Stage-1 mixture: behaviour cloning, skill-conditioned behaviour cloning, analyzer SFT.

    Skill-conditioned examples are the behaviour-cloning steps of every episode that has an
    accepted skill, with that skill injected into the prompt (ALGORITHMS.md injection).
    """
    accepted = skills[skills["accepted"] & skills["parse_ok"]].set_index("episode_id")["skill"]
    conditioned = bc_examples[bc_examples["episode_id"].isin(accepted.index)].copy()
    conditioned["prompt"] = [
        inject_skill(text, accepted[episode]) for text, episode in zip(conditioned["prompt"], conditioned["episode_id"])
    ]
    conditioned["kind"] = "skill_bc"
    analyzer = analyzer_sft_set.assign(kind="analyzer")
    parts = [bc_examples, conditioned] + [analyzer] * settings.analyzer_repeat
    mixture = pd.concat([part[["prompt", "response", "kind"]] for part in parts], ignore_index=True)
    counts = mixture["kind"].value_counts().to_dict()
    logger.info("Stage-1 mixture: %s", counts)
    tracking.log_metrics({f"stage1/examples_{kind}": n for kind, n in counts.items()})
    return mixture


def train_stage1_policy(base_policy, examples: pd.DataFrame, project: ProjectConfig, settings: Stage1Config):
    """Stage 1 of SEED from the base policy: the checkpoint RL starts from, and its loss history."""
    history = train_sft(base_policy, examples, settings.sft, log_prefixed("stage1"), seed=project.seeds.examples)
    return base_policy, history.assign(phase="stage1")

"""Fitting the hindsight teacher on the policy's own episodes (route A).

SEED's teacher is the policy re-reading its own actions with the skill it wrote from the
same episode (``l_skill``). Over the policy's own samples the expected teacher gap
``l_skill - l_plain`` is ``E[log p(a | s, k) - log p(a | s)]``: for the Bayes posterior of
the policy's actions given the hindsight skill ``k`` of their episode this is the
conditional mutual information ``I(a; k | s) >= 0`` (and, for each skill, a KL divergence
>= 0); for any other skill-conditioned model it is that minus a divergence. Expert steps
cannot teach that posterior: the expert's action is predictable from the state, so the
skill adds nothing there (docs/results.md, "Why the teacher gap is negative"). The policy's own
episodes, sampled at the temperature RL samples at, can, since the skill written from an
episode tells which of its random choices were made.

So the fit: the policy plays training tasks, writes its own skill for each won episode as
the RL loop does (greedy, under the grammar), and trains on every step of those episodes
twice: with the skill (the played action the target: the maximum-likelihood fit of the
posterior) and without it (the same pair: on the policy's own samples its expected gradient
is zero, so it anchors the plain policy while the shared weights learn the skill-conditioned
one), mixed with the Stage-1 mixture so nothing Stage 1 taught is lost. Lost episodes are
left out: fitting the posterior of an ``avoid:`` skill would teach the teacher to raise the
actions that lost. Optionally each step also comes with the skill of a won episode of
another task type (kind ``fit_unrelated``): such a skill says nothing about the episode,
so its posterior is the plain policy, and the pair teaches the teacher to leave its
log-probs alone under a skill that does not fit (the premise's unrelated control measures
exactly that context cost).
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from hindsight.policy.encoding import StepSample
from hindsight.skills.episode_views import EpisodeView
from hindsight.policy.skill_injection import inject_skill

FIT_KINDS = ("fit_plain", "fit_skill", "fit_unrelated")
"""The example kinds of a fit step: without a skill, with its episode's skill, with an
unrelated episode's skill (only when one is given)."""


def teacher_fit_pairs(
    episodes: Sequence[EpisodeView], samples: Sequence[StepSample], skill_of: dict[str, str],
    unrelated_of: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Every step of every won episode that has a skill, as two examples: the prompt the
    policy read (kind ``fit_plain``) and the same prompt with the episode's skill injected
    where the RL loop injects it (kind ``fit_skill``), the played action the response of both;
    with ``unrelated_of`` a third, the prompt with that episode's unrelated skill (kind
    ``fit_unrelated``) where it has one.

    Args:
        episodes: The played episodes (their outcome and actions).
        samples: Their step samples (the prompts as the policy read them), step-wise layout.
        skill_of: Episode id -> the skill the policy wrote for it.
        unrelated_of: Episode id -> the skill of another task type's episode
            (``skills.assignment.unrelated_skills``), or None.

    Returns:
        Columns episode_id, step, prompt, response, kind; each step's rows in ``FIT_KINDS`` order.

    Raises:
        ValueError: A sample of a won episode has no prompt text (the multi-turn layout,
            whose prompts are never rebuilt from text): the fit is step-wise only.
    """
    played = {  # episode id -> step -> the played action, for the won episodes with a skill
        episode.episode_id: {step.step: step.response or step.action for step in episode.steps}
        for episode in episodes if episode.success and skill_of.get(episode.episode_id)
    }
    rows = []
    for sample in samples:
        actions = played.get(sample.episode_id)
        if actions is None:
            continue
        if not sample.prompt:
            raise ValueError(
                f"teacher fit: step {sample.step} of episode {sample.episode_id!r} has no prompt text "
                "(multi-turn layout); stage1.teacher_fit needs rollout.layout: stepwise"
            )
        action = actions.get(sample.step)
        if action is None:
            raise ValueError(f"teacher fit: episode {sample.episode_id!r} has a sample for step {sample.step} but no such step")
        prompts = [sample.prompt, inject_skill(sample.prompt, skill_of[sample.episode_id])]
        if (unrelated_of or {}).get(sample.episode_id):
            prompts.append(inject_skill(sample.prompt, unrelated_of[sample.episode_id]))
        for kind, prompt in zip(FIT_KINDS, prompts):
            rows.append({"episode_id": sample.episode_id, "step": sample.step, "prompt": prompt, "response": action, "kind": kind})
    return pd.DataFrame(rows, columns=["episode_id", "step", "prompt", "response", "kind"])


def fit_mixture(pairs: pd.DataFrame, stage1_mixture: pd.DataFrame, repeat: int) -> pd.DataFrame:
    """``repeat`` copies of the fit pairs beside the Stage-1 mixture (step-wise rows only),
    each row with its step's ``episode_id`` and ``step`` where the mixture keeps them (the
    key of a step's screen for a policy that sees)."""
    columns = ["prompt", "response", "kind"]
    if {"episode_id", "step"} <= set(stage1_mixture.columns):
        columns += ["episode_id", "step"]
    if "header" in stage1_mixture and stage1_mixture["header"].notna().any():
        raise ValueError("stage1.teacher_fit: the Stage-1 mixture holds multi-turn rows; the fit is step-wise only")
    parts = [pairs.reindex(columns=columns)] * repeat + [stage1_mixture.reindex(columns=columns)]
    return pd.concat(parts, ignore_index=True)

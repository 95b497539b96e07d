"""Does the policy's own skill make it a better teacher? SEED's premise, measured.

SEED distils from the policy re-scoring its own actions with its own hindsight skill in
context (``l_skill``). That signal helps only if (1) the policy writes skills that parse and
say something, and (2) with a skill in context the policy's log-probs move the right way.
This module measures both after Stage 1 (route A):

- ``evaluate_analyzer``: the analyzer on held-out (analysis prompt -> skill) pairs, decoded
  exactly as the RL loop decodes (compact: greedy under each episode's grammar; json: greedy
  free text or the structured frame): parse rate and exact match.
- ``teacher_gaps`` / ``premise_table``: for played episodes, ``l_skill - l_plain`` over the
  non-forced action tokens (``StepSample.choice_positions``; forced tokens carry no choice)
  with the policy's own skill, the rule teacher's skill, and the controls of
  ``stage1.premise_controls`` (an unrelated own skill of another task with the same outcome,
  the same-form content control, the own skill shuffled); a source whose skill differs by
  step is a ``StepSkills``;
- ``premise_metrics``: the token-weighted gaps with 95% bootstrap intervals over episodes
  (each source on its own resampling stream, ``stream_seed``), and the share of steps where
  the skill can tell what the state does not (the plain policy was unsure of the played
  action and the skill names it: ``informative_share``); ``stage1.premise_report`` writes
  them as a table, with the controls' notes and the copy test (``stage1.premise_copy``).

The sign to expect differs by outcome: on a won episode a useful skill raises the actions
played (gap > 0); on a lost one an avoidance rule should lower the wrong ones (gap < 0 there
is the right direction). Within an episode it differs by step too, so each row also splits
its tokens by whether the skill names the step's action (``compact.skill_lists_action``):
a teacher that reads a ``do:`` workflow raises the listed actions of a won episode and may
lower its detours; one that reads an ``avoid:`` rule lowers the listed ones. A skill that is
not compact (JSON) lists nothing. Each row also keeps the gap on the tokens the plain policy
was unsure of (probability below ``UNSURE_PROBABILITY``): where the state leaves the choice
open a teacher has something to add; on the tokens it was sure of a skill can only confirm
them (gap <= -log p, near 0) or move mass away.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import pandas as pd

from hindsight.algorithms.intervals import bootstrap_weighted_mean_interval, weighted_mean
from hindsight.policy import Policy
from hindsight.policy.encoding import StepSample
from hindsight.skills.compact import skill_lists_action
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.records import parse_skill_json

if TYPE_CHECKING:
    from hindsight.skills.analyzers import AnalyzerConfig

PREMISE_COLUMNS = (
    "episode_id", "task_type", "success", "skill_source", "skill", "tokens", "gap_mean", "positive_share",
    "listed_tokens", "listed_gap_mean", "unlisted_gap_mean", "unsure_tokens", "unsure_gap_mean",
    "steps", "unsure_steps", "listed_steps", "informative_steps",
)
UNSURE_PROBABILITY = 0.5
"""A non-forced token whose plain probability is below this counts as one the policy was unsure of."""
ANALYZER_EVAL_COLUMNS = ("episode_id", "target", "written", "parse_ok", "exact")


@dataclass(frozen=True)
class StepSkills:
    """A skill per scored step: ``by_step`` maps (episode id, step) to the skill that step is
    re-scored with; ``of_episode`` is the episode's skill its premise row records and splits
    its steps by (listed or not). Steps missing from ``by_step`` are not scored."""

    by_step: dict[tuple[str, int], str] = field(default_factory=dict)
    of_episode: dict[str, str] = field(default_factory=dict)


def analyzer_outputs(policy: Policy, prompts: Sequence[str], templates: Sequence[Sequence[str]], analyzer: AnalyzerConfig) -> list[str]:
    """Greedy analyses of ``prompts`` as the RL loop writes them (JSON texts, one per prompt)."""
    if not prompts:
        return []
    if analyzer.compact:
        from hindsight.skills.compact_decoding import grammar_skill_outputs

        from hindsight.skills.compact import AVOID_HEAD, DO_HEAD, FAILURE_MARK

        heads = [AVOID_HEAD if FAILURE_MARK in prompt else DO_HEAD for prompt in prompts]
        return grammar_skill_outputs(policy, list(prompts), [list(t) for t in templates], analyzer.max_templates, heads=heads)
    from hindsight.skills.policy_teacher import policy_analyzer

    return list(policy_analyzer(policy, analyzer.max_new_tokens, analyzer.structured)(list(prompts)))


def evaluate_analyzer(policy: Policy, examples: pd.DataFrame, analyzer: AnalyzerConfig) -> pd.DataFrame:
    """The analyzer on the held-out rows of an analyzer SFT set (``skills.sft_set``).

    Args:
        policy: The policy (after Stage 1).
        examples: The analyzer SFT set (columns ``prompt``, ``skill``, ``templates``, ``held_out``).
        analyzer: The analyzer settings the set was built with.

    Returns:
        One row per held-out example: ``ANALYZER_EVAL_COLUMNS`` (``written`` is the parsed
        skill, empty when the output did not parse).
    """
    held = examples[examples["held_out"].astype(bool)] if len(examples) else examples
    outputs = analyzer_outputs(policy, held["prompt"].tolist(), held["templates"].tolist(), analyzer)
    rows = []
    for row, output in zip(held.itertuples(index=False), outputs):
        fields = parse_skill_json(output)
        written = fields["episode_skill"] if fields else ""
        rows.append(
            {"episode_id": row.episode_id, "target": row.skill, "written": written,
             "parse_ok": fields is not None, "exact": fields is not None and written == row.skill}
        )
    return pd.DataFrame(rows, columns=list(ANALYZER_EVAL_COLUMNS))


STEP_KEY_SEPARATOR = "\x1f"
"""Joins (episode id, step) into the scoring key of a step whose skill is its own (``StepSkills``)."""


def _augmented_logprobs(policy: Policy, samples: Sequence[StepSample], skills: dict[str, str] | StepSkills, batch_size: int) -> list:
    """``l_skill`` per sample (None where it has no skill): by episode, or for ``StepSkills``
    by step (each scored step re-keyed so that its own skill is the one injected)."""
    from hindsight.training.distillation import skill_augmented_logprobs

    if not isinstance(skills, StepSkills):
        return skill_augmented_logprobs(policy.model, policy.tokenizer, samples, skills, batch_size)
    scored = [i for i, sample in enumerate(samples) if (sample.episode_id, sample.step) in skills.by_step]
    keyed = [
        dataclasses.replace(samples[i], episode_id=f"{samples[i].episode_id}{STEP_KEY_SEPARATOR}{samples[i].step}") for i in scored
    ]
    skill_of_key = {sample.episode_id: skills.by_step[(samples[i].episode_id, samples[i].step)] for i, sample in zip(scored, keyed)}
    result: list = [None] * len(samples)
    for i, logp in zip(scored, skill_augmented_logprobs(policy.model, policy.tokenizer, keyed, skill_of_key, batch_size)):
        result[i] = logp
    return result


def step_token_logprobs(
    policy: Policy, samples: Sequence[StepSample], skill_of_episode: dict[str, str] | StepSkills, batch_size: int = 16,
    plain: Sequence | None = None,
) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """``(l_plain, l_skill)`` of every non-forced response token, per (episode, step) with a
    skill (``skill_of_episode``: by episode, or a ``StepSkills``); ``plain``: the samples'
    plain log-probs when already scored (else scored here)."""
    from hindsight.training.distillation import response_logprobs

    if plain is None:
        plain = response_logprobs(policy.model, samples, batch_size, policy.tokenizer.pad_token_id)
    augmented = _augmented_logprobs(policy, samples, skill_of_episode, batch_size)
    pairs: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for sample, logp_plain, logp_skill in zip(samples, plain, augmented):
        if logp_skill is None:
            continue
        chosen = [(float(p), float(s)) for s, p, choice in zip(logp_skill, logp_plain, sample.choice_positions) if choice]
        pairs.setdefault((sample.episode_id, sample.step), []).extend(chosen)
    return pairs


def step_teacher_gaps(
    policy: Policy, samples: Sequence[StepSample], skill_of_episode: dict[str, str], batch_size: int = 16
) -> dict[tuple[str, int], list[float]]:
    """``l_skill - l_plain`` of every non-forced response token, per (episode, step) with a skill."""
    return {
        key: [skilled - plain for plain, skilled in values]
        for key, values in step_token_logprobs(policy, samples, skill_of_episode, batch_size).items()
    }


def teacher_gaps(policy: Policy, samples: Sequence[StepSample], skill_of_episode: dict[str, str], batch_size: int = 16) -> dict[str, list[float]]:
    """``l_skill - l_plain`` of every non-forced response token, per episode with a skill."""
    gaps: dict[str, list[float]] = {}
    for (episode_id, _), values in step_teacher_gaps(policy, samples, skill_of_episode, batch_size).items():
        gaps.setdefault(episode_id, []).extend(values)
    return gaps


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def episode_premise_row(
    episode: EpisodeView, source: str, skill: str, step_gaps: dict[int, list[float]],
    step_plain: dict[int, list[float]] | None = None,
) -> dict | None:
    """One ``PREMISE_COLUMNS`` row: the episode's gaps, all, split by whether ``skill`` lists
    the step's action, and on the tokens whose plain log-prob (``step_plain``, parallel to
    ``step_gaps``; without it no token counts as unsure) is below log ``UNSURE_PROBABILITY``;
    None when the episode has no non-forced token.

    The step counts say how much a skill can tell: ``unsure_steps`` are the steps whose
    played action the plain policy gave a probability below ``UNSURE_PROBABILITY`` (the sum
    of its non-forced tokens' log-probs: the action's probability under the decoder),
    ``listed_steps`` those whose action the skill names, ``informative_steps`` both (the
    state left the choice open and the skill names the answer)."""
    action_of = {step.step: step.action for step in episode.steps}
    listed: list[float] = []
    unlisted: list[float] = []
    unsure: list[float] = []
    counts = {"steps": 0, "unsure_steps": 0, "listed_steps": 0, "informative_steps": 0}
    for step, values in step_gaps.items():
        names_action = skill_lists_action(skill, action_of.get(step, ""))
        (listed if names_action else unlisted).extend(values)
        plain = (step_plain or {}).get(step, [])
        unsure.extend(gap for gap, logp in zip(values, plain) if logp < math.log(UNSURE_PROBABILITY))
        unsure_step = step_plain is not None and sum(plain) < math.log(UNSURE_PROBABILITY)
        counts["steps"] += 1
        counts["unsure_steps"] += unsure_step
        counts["listed_steps"] += names_action
        counts["informative_steps"] += unsure_step and names_action
    values = listed + unlisted
    if not values:
        return None
    return {**counts,
        "episode_id": episode.episode_id, "task_type": episode.task_type, "success": bool(episode.success),
        "skill_source": source, "skill": skill, "tokens": len(values), "gap_mean": _mean(values),
        "positive_share": sum(v > 0 for v in values) / len(values),
        "listed_tokens": len(listed), "listed_gap_mean": _mean(listed), "unlisted_gap_mean": _mean(unlisted),
        "unsure_tokens": len(unsure), "unsure_gap_mean": _mean(unsure),
    }


def premise_table(
    policy: Policy, episodes: Sequence[EpisodeView], samples: Sequence[StepSample],
    skills_by_source: dict[str, dict[str, str] | StepSkills], batch_size: int = 16,
) -> pd.DataFrame:
    """Per episode and skill source, the mean teacher gap over its non-forced action tokens.

    Args:
        policy: The policy that played and re-scores (the teacher is the policy itself).
        episodes: The played episodes.
        samples: Their step samples.
        skills_by_source: Source name (e.g. ``own``, ``rule``, ``unrelated``) -> episode id ->
            skill, or a ``StepSkills`` (a skill per step; the row records ``of_episode``'s
            skill and splits the steps by it).
        batch_size: Rows per scoring pass.

    Returns:
        ``PREMISE_COLUMNS`` rows (episodes with no non-forced token are left out);
        ``listed_gap_mean`` / ``unlisted_gap_mean`` / ``unsure_gap_mean`` are NaN where no
        token falls on that side.
    """
    from hindsight.training.distillation import response_logprobs

    rows = []
    plain_logprobs = response_logprobs(policy.model, samples, batch_size, policy.tokenizer.pad_token_id) if samples else []
    for source, skills in skills_by_source.items():
        skill_of_episode = skills.of_episode if isinstance(skills, StepSkills) else skills
        by_episode: dict[str, dict[int, list[float]]] = {}
        plain_by_episode: dict[str, dict[int, list[float]]] = {}
        for (episode_id, step), pairs in step_token_logprobs(policy, samples, skills, batch_size, plain_logprobs).items():
            by_episode.setdefault(episode_id, {})[step] = [skilled - plain for plain, skilled in pairs]
            plain_by_episode.setdefault(episode_id, {})[step] = [plain for plain, _ in pairs]
        for episode in episodes:
            if episode.episode_id in by_episode:
                row = episode_premise_row(
                    episode, source, skill_of_episode[episode.episode_id], by_episode[episode.episode_id],
                    plain_by_episode[episode.episode_id],
                )
                if row is not None:
                    rows.append(row)
    return pd.DataFrame(rows, columns=list(PREMISE_COLUMNS))


def _weighted(means: pd.Series, weights: pd.Series) -> float | None:
    """The token-weighted mean (``algorithms.weighted_mean``), None where no token counts."""
    mean = weighted_mean(means.tolist(), weights.tolist())
    return mean if math.isfinite(mean) else None


def stream_seed(seed: int, source: str) -> int:
    """The bootstrap seed of one source: the run's seed and the source's name hashed
    together (CRC-32), so each source resamples its episodes on an independent stream and
    two sources with close means do not get alike intervals by construction."""
    return zlib.crc32(f"{seed}/{source}".encode())


def _interval(means: pd.Series, weights: pd.Series, seed: int) -> tuple[float, float]:
    """The 95% bootstrap interval over episodes of a token-weighted mean gap."""
    return bootstrap_weighted_mean_interval(means.tolist(), weights.tolist(), seed=seed)


def premise_metrics(table: pd.DataFrame, prefix: str = "premise", seed: int = 0) -> dict[str, float]:
    """Token-weighted mean gap and positive share per skill source, overall and by outcome,
    the gap on the steps whose action the skill lists and on the others, and on the tokens
    the plain policy was unsure of (``<prefix>/<source>/<label>/{listed,unlisted,unsure}/{gap_mean,tokens}``;
    ``unsure`` only for tables that have its columns: versions written before it lack them).

    Every gap has its 95% bootstrap interval over episodes (``.../gap_low``, ``.../gap_high``;
    ``algorithms.bootstrap_weighted_mean_interval``, each source on its own stream:
    ``stream_seed(seed, source)``), and every
    ``<source>/<label>`` its ``episodes`` and, for tables with the step counts, the share of
    steps the plain policy was unsure of (``unsure_step_share``), the share whose action the
    skill names (``listed_step_share``) and both at once (``informative_share``: where the
    skill can tell what the state does not)."""
    metrics: dict[str, float] = {}
    for source, part in table.groupby("skill_source"):
        source_seed = stream_seed(seed, str(source))
        for label, rows in (("all", part), ("won", part[part["success"]]), ("lost", part[~part["success"]])):
            tokens = rows["tokens"].sum()
            if not tokens:
                continue
            key = f"{prefix}/{source}/{label}"
            metrics[f"{key}/episodes"] = float(len(rows))
            metrics[f"{key}/gap_mean"] = _weighted(rows["gap_mean"], rows["tokens"])
            metrics[f"{key}/gap_low"], metrics[f"{key}/gap_high"] = _interval(rows["gap_mean"], rows["tokens"], source_seed)
            metrics[f"{key}/positive_share"] = _weighted(rows["positive_share"], rows["tokens"])
            metrics[f"{key}/tokens"] = float(tokens)
            if "steps" in rows and rows["steps"].notna().all() and rows["steps"].sum():
                steps = float(rows["steps"].sum())
                for name in ("unsure", "listed"):
                    metrics[f"{key}/{name}_step_share"] = float(rows[f"{name}_steps"].sum()) / steps
                metrics[f"{key}/informative_share"] = float(rows["informative_steps"].sum()) / steps
            sides = [("listed", rows["listed_gap_mean"], rows["listed_tokens"]),
                     ("unlisted", rows["unlisted_gap_mean"], rows["tokens"] - rows["listed_tokens"])]
            if "unsure_tokens" in rows:
                sides.append(("unsure", rows["unsure_gap_mean"], rows["unsure_tokens"]))
            for side, means, weights in sides:
                metrics[f"{key}/{side}/tokens"] = float(weights.sum())
                mean = _weighted(means, weights)
                if mean is not None:
                    metrics[f"{key}/{side}/gap_mean"] = mean
                    metrics[f"{key}/{side}/gap_low"], metrics[f"{key}/{side}/gap_high"] = _interval(means, weights, source_seed)
    return metrics

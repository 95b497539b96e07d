"""The copy test: does the policy read the action a skill names?

Before any SEED run, one question decides whether a skill in context can teach: when the
skill names an action, does the policy's probability of that action rise? On the steps of
won episodes, for a valid action X of the step and another valid action Y of the same step
(a seeded choice), the test takes

    log P(X | skill "do: X") - log P(X | skill "do: Y")

where log P(X) is the log-probability of X's response under the policy's decoding rule at
that step (the sum over its non-forced tokens, the valid-action trie rebuilt for X as the
scorer does for a played action). Both skills have the same form and length class; only
which action they name differs. A policy that reads gives a positive mean; one that does
not, a mean near 0 and half of the pairs positive.

- ``copy_pairs``: the (episode, step, X, Y) pairs, at most ``max_pairs``, a seeded draw
  spread over the won steps;
- ``copy_test_table``: the pairs scored (``COPY_COLUMNS``);
- ``copy_metrics``: the mean with its 95% bootstrap interval over episodes (pairs of one
  episode share its prompts), the share positive and the counts, as
  ``<prefix>/copy/{gap_mean,gap_low,gap_high,positive_share,pairs,steps,episodes}``, and the
  same over the pairs that differ only in their last word (``copy_same_verb``: ``move north``
  against ``move south``), which a policy that reads only a skill's verbs does not pass.
"""

from __future__ import annotations

import dataclasses
import random
from typing import NamedTuple, Sequence

import pandas as pd

from hindsight.algorithms.intervals import bootstrap_weighted_mean_interval
from hindsight.policy import Policy
from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import StepSample, encode_response
from hindsight.skills.compact import DO_HEAD, concrete_action, render_skill
from hindsight.skills.episode_views import EpisodeView
from hindsight.stage1.premise import stream_seed

COPY_COLUMNS = ("episode_id", "step", "action", "other", "logp_named", "logp_other", "gap")
COPY_KEY_SEPARATOR = "\x1f"
"""Joins (episode id, step, pair index) into the scoring key of one pair's sample."""


class CopyPair(NamedTuple):
    """One pair of the copy test: at ``step`` of ``episode_id``, the action X scored under a
    skill naming X and under one naming Y (both valid at that step)."""

    episode_id: str
    step: int
    action: str
    other: str


def copy_pairs(
    episodes: Sequence[EpisodeView], valid_actions: dict[tuple[str, int], Sequence[str]], max_pairs: int, seed: int
) -> list[CopyPair]:
    """The copy test's pairs: every valid action X of every step of a won episode (steps with
    two distinct valid actions or more), each with another valid action Y of its step drawn
    by a seeded generator; a seeded draw of at most ``max_pairs`` of them (0: none), in
    (episode, step) order."""
    if max_pairs < 0:
        raise ValueError(f"max_pairs must be >= 0, got {max_pairs!r}")
    rng = random.Random(seed)
    candidates = []
    for episode in episodes:
        if not episode.success:
            continue
        for step in episode.steps:
            actions = list(dict.fromkeys(str(a) for a in valid_actions.get((episode.episode_id, step.step), ())))
            for action in actions:
                others = [a for a in actions if concrete_action(a) != concrete_action(action)]
                if others:
                    candidates.append(CopyPair(episode.episode_id, step.step, action, rng.choice(others)))
    if len(candidates) > max_pairs:
        kept = set(rng.sample(range(len(candidates)), max_pairs))
        candidates = [pair for index, pair in enumerate(candidates) if index in kept]
    return candidates


def answer_sample(base: StepSample, tokenizer, action: str, valid: Sequence[str], key: str) -> StepSample:
    """``base`` (a played step's sample) answering ``action`` instead, keyed ``key``: its
    response ids, and the allowed ids of the valid-action trie along them when ``base`` was
    decoded under one (a free-text sample stays free). The copy test and the premise's
    ranking (``stage1.premise_ranking``) score other valid actions of a step so."""
    response_ids = encode_response(tokenizer, action)
    allowed = ActionTrie.from_actions(tokenizer, list(valid)).allowed_along(response_ids) if base.allowed_ids is not None else None
    return dataclasses.replace(base, episode_id=key, response_ids=response_ids, allowed_ids=allowed, old_logprobs=None)


def copy_test_table(
    policy: Policy, samples: Sequence[StepSample], pairs: Sequence[CopyPair],
    valid_actions: dict[tuple[str, int], Sequence[str]], batch_size: int = 16,
) -> pd.DataFrame:
    """The copy test's pairs scored: per pair, log P(X | do: X), log P(X | do: Y) and their
    difference (``COPY_COLUMNS``; pairs whose step has no sample are left out)."""
    from hindsight.training.distillation import skill_augmented_logprobs

    by_step = {(sample.episode_id, sample.step): sample for sample in samples}
    keyed, named, other = [], {}, {}
    for index, pair in enumerate(pairs):
        base = by_step.get((pair.episode_id, pair.step))
        if base is None:
            continue
        key = COPY_KEY_SEPARATOR.join((pair.episode_id, str(pair.step), str(index)))
        keyed.append((pair, answer_sample(base, policy.tokenizer, pair.action, valid_actions[(pair.episode_id, pair.step)], key)))
        named[key] = render_skill(DO_HEAD, [concrete_action(pair.action)])
        other[key] = render_skill(DO_HEAD, [concrete_action(pair.other)])
    pair_samples = [sample for _, sample in keyed]
    under_named = skill_augmented_logprobs(policy.model, policy.tokenizer, pair_samples, named, batch_size)
    under_other = skill_augmented_logprobs(policy.model, policy.tokenizer, pair_samples, other, batch_size)
    rows = []
    for (pair, sample), logp_named, logp_other in zip(keyed, under_named, under_other):
        chosen = sample.choice_positions
        total_named = float(sum(float(v) for v, c in zip(logp_named, chosen) if c))
        total_other = float(sum(float(v) for v, c in zip(logp_other, chosen) if c))
        rows.append({"episode_id": pair.episode_id, "step": pair.step, "action": pair.action, "other": pair.other,
                     "logp_named": total_named, "logp_other": total_other, "gap": total_named - total_other})
    return pd.DataFrame(rows, columns=list(COPY_COLUMNS))


def same_verb(action: str, other: str) -> bool:
    """Whether two actions differ only in their last word (``move north`` / ``move south``,
    ``take apple`` / ``take pear``): the pair then asks whether the policy reads the object
    or direction a skill names, not only its verb."""
    words, others = concrete_action(action).split(), concrete_action(other).split()
    return len(words) == len(others) >= 2 and words[:-1] == others[:-1] and words[-1] != others[-1]


def _copy_figures(table: pd.DataFrame, key: str, seed: int) -> dict[str, float]:
    metrics = {f"{key}/pairs": float(len(table)), f"{key}/steps": 0.0, f"{key}/episodes": 0.0}
    if table.empty:
        return metrics
    per_episode = table.groupby("episode_id")["gap"].agg(["mean", "size"])
    low, high = bootstrap_weighted_mean_interval(per_episode["mean"].tolist(), per_episode["size"].tolist(), seed=seed)
    metrics.update({
        f"{key}/steps": float(table[["episode_id", "step"]].drop_duplicates().shape[0]),
        f"{key}/episodes": float(len(per_episode)),
        f"{key}/gap_mean": float(table["gap"].mean()), f"{key}/gap_low": low, f"{key}/gap_high": high,
        f"{key}/positive_share": float((table["gap"] > 0).mean()),
    })
    return metrics


def copy_metrics(table: pd.DataFrame, prefix: str = "premise", seed: int = 0) -> dict[str, float]:
    """The copy test's figures under ``<prefix>/copy/``: ``gap_mean`` (mean over pairs, nats
    per action), ``gap_low`` / ``gap_high`` (its 95% bootstrap interval, resampling episodes,
    on a stream of its own), ``positive_share`` (pairs whose gap is above 0), ``pairs``,
    ``steps`` and ``episodes``; only the counts (0) when no pair was scored. The same under
    ``<prefix>/copy_same_verb/`` for the pairs whose two actions differ only in their last
    word (``same_verb``): a policy may read a skill's verb and not its object or direction."""
    metrics = _copy_figures(table, f"{prefix}/copy", stream_seed(seed, "copy"))
    if not table.empty:
        kept = table[[same_verb(a, o) for a, o in zip(table["action"], table["other"])]]
        metrics.update(_copy_figures(kept, f"{prefix}/copy_same_verb", stream_seed(seed, "copy_same_verb")))
    return metrics

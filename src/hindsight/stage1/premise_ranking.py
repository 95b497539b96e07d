"""Does SEED's shift rank the optimal action above the others? The premise check's ranking.

SEED weighs every sampled action token by the gate ``sigmoid(gate_beta * Delta)``, with
``Delta = log p(a | skill) - log p(a)``. The gate is monotone in ``Delta``, so whether
distillation pushes the policy the right way depends on whether ``Delta`` is larger on good
actions than on bad ones, not on its mean: a mean gap can be below 0 while the ranking is
right, and near 0 while it is wrong. Where the environment labels the optimal actions
(``envs.action_labels``: exact on TextWorldExpress coin from its map, the gold solver's next
action elsewhere as a named proxy), this module measures that ranking:

- ``ranked_steps``: the labelled steps whose valid actions hold both an optimal and a
  suboptimal action (the only steps where a ranking can be right or wrong), at most
  ``max_steps`` of them (a seeded draw; 0: all);
- ``mirrored_skills``: the same-form control with the way reversed: the own skill with
  every direction swapped (north <-> south, east <-> west), the same text but for where it
  points; ``mirrored_metrics`` says how many of its swapped items are valid actions of the
  episode (a mirrored way that names no real exit teaches nothing either way);
- ``ranking_table``: on every ranked step, every valid action scored without a skill and
  with each source's skill (``RANKING_COLUMNS``: ``delta`` is the action's summed shift over
  its non-forced tokens, nats per action; ``token_gaps`` the shifts per token);
- ``ranking_metrics``: per source, the AUROC of ``delta`` for optimal against suboptimal
  actions (``algorithms.ranking``), beside the AUROC of the plain log-prob and of the
  teacher's (with the own skill), on two populations:

      within   over each step's valid actions, pairs within a step only: does the skill
               point at the right action of the step?
      pooled   over the actions the policy played, pairs across steps: what the gate sees;

  each on all ranked steps, won and lost episodes apart, the steps where the played action
  was suboptimal (within only: there every played action is a negative) and the steps
  where the coin is not in view (``take coin`` is not valid there: the state does not tell
  the answer). Intervals: an episode-cluster bootstrap (``INTERVAL``: BCa at expanded
  levels). Beside each pooled AUROC, the push SEED's update gives: ``opd_coef * (E[gate | optimal] - E[gate | suboptimal])`` over the
  played actions' non-forced tokens; and per control, the own skill's AUROC minus the
  control's, paired (one resampling of episodes for both, on the actions both scored).
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable, Sequence

import pandas as pd

from hindsight.algorithms.ranking import cluster_bootstrap_auroc, gate_push, paired_cluster_bootstrap_auroc_difference
from hindsight.policy import Policy
from hindsight.policy.encoding import StepSample
from hindsight.skills.compact import concrete_action, parse_compact_skill, render_skill
from hindsight.skills.episode_views import EpisodeView
from hindsight.stage1.premise import stream_seed
from hindsight.stage1.premise_copy import answer_sample

RANKING_COLUMNS = (
    "episode_id", "success", "step", "action", "played", "optimal", "coin_in_view", "source", "logp_plain", "delta",
    "token_gaps",
)
RANKING_SOURCES = ("own", "rule", "unrelated", "mirrored")
"""The sources the ranking scores: the policy's own skill, the rule teacher's, another task's
own skill (only where its text differs from the episode's own) and the own skill mirrored."""
CONTROLS = ("rule", "unrelated", "mirrored")
POPULATIONS = ("within", "pooled")
SUBSETS = ("all", "won", "lost", "played_suboptimal", "coin_out_of_view")
TAKE_COIN = "take coin"
MIRROR = {"north": "south", "south": "north", "east": "west", "west": "east"}
_DIRECTION = re.compile(r"\b(north|south|east|west)\b")
INTERVAL = "expanded_bca"
"""The intervals' method (``algorithms.ranking``): BCa at expanded levels, whose coverage
``benchmarks/auroc_coverage.py`` measured at 0.94-0.96 with 11 episodes and 0.93-0.96 with
43-60 (plain percentile and BCa: 0.90-0.92 with 11)."""
KEY_SEPARATOR = "\x1f"
"""Joins (episode id, step, action index) into the scoring key of one scored action."""

Labels = dict[tuple[str, int], frozenset[str]]
"""(episode id, step) -> the optimal actions there (labelled steps only)."""


def episode_labels(episodes: Sequence[EpisodeView], tasks: Sequence[Any], env_factory: Callable) -> tuple[Labels, set[str]]:
    """The optimal actions at every labelled step of ``episodes`` (``envs.action_labels``),
    each episode's task found by its group id among ``tasks`` (``rollout.tasks.TaskRef``),
    one environment per game; and the label sources met (``map``, ``gold_next``)."""
    from hindsight.envs.action_labels import label_episode

    by_group = {task.group_id: task for task in tasks}
    envs: dict[str, Any] = {}
    labels: Labels = {}
    sources: set[str] = set()
    try:
        for episode in episodes:
            task = by_group.get(episode.group_id)
            if task is None:
                continue
            key = repr(task.spec)
            if key not in envs:
                envs[key] = env_factory(task.spec)
            found = label_episode(envs[key], task.seed, task.split, [step.action for step in episode.steps])
            if found is None:
                continue
            sources.add(found.source)
            for step, optimal in zip(episode.steps, found.optimal):
                if optimal is not None:
                    labels[(episode.episode_id, step.step)] = frozenset(concrete_action(a) for a in optimal)
    finally:
        for env in envs.values():
            env.close()
    return labels, sources


def ranked_steps(labels: Labels, valid_actions: dict[tuple[str, int], Sequence[str]], max_steps: int, seed: int) -> list[tuple[str, int]]:
    """The labelled steps whose valid actions hold an optimal and a suboptimal one, in
    (episode, step) order; a seeded draw of ``max_steps`` of them when there are more (0: all)."""
    if max_steps < 0:
        raise ValueError(f"max_steps must be >= 0, got {max_steps!r}")
    steps = []
    for key in sorted(labels):
        valid = {concrete_action(a) for a in valid_actions.get(key, ())}
        if valid & labels[key] and valid - labels[key]:
            steps.append(key)
    if max_steps and len(steps) > max_steps:
        kept = set(random.Random(seed).sample(range(len(steps)), max_steps))
        steps = [step for index, step in enumerate(steps) if index in kept]
    return steps


def mirror_action(action: str) -> str:
    """``action`` with every direction word swapped (``move north`` -> ``move south``)."""
    return _DIRECTION.sub(lambda found: MIRROR[found.group(1)], action)


def mirrored_skills(own: dict[str, str]) -> dict[str, str]:
    """Each own compact skill with its directions swapped, item by item; a skill that names
    no direction has no mirror and is left out (so is a text that is not a compact skill)."""
    mirrored = {}
    for episode_id, skill in own.items():
        parsed = parse_compact_skill(skill)
        if parsed is None:
            continue
        head, items = parsed
        swapped = [mirror_action(item) for item in items]
        if swapped != items:
            mirrored[episode_id] = render_skill(head, swapped)
    return mirrored


def mirrored_metrics(
    episodes: Sequence[EpisodeView], own: dict[str, str], mirrored: dict[str, str],
    valid_actions: dict[tuple[str, int], Sequence[str]],
) -> dict[str, float]:
    """``episodes`` (own skills that have a mirror), ``applicable_share`` (of the own skills)
    and ``valid_share``: of the mirrored items that differ from the own ones, the share that
    are a valid action at some step of their episode."""
    changed = valid = 0
    for episode in episodes:
        if episode.episode_id not in mirrored:
            continue
        actions = {concrete_action(a) for step in episode.steps for a in valid_actions.get((episode.episode_id, step.step), ())}
        own_items = (parse_compact_skill(own[episode.episode_id]) or ("", []))[1]
        for item, swapped in zip(own_items, parse_compact_skill(mirrored[episode.episode_id])[1]):
            if item != swapped:
                changed += 1
                valid += concrete_action(swapped) in actions
    return {
        "episodes": float(len(mirrored)), "applicable_share": len(mirrored) / len(own) if own else float("nan"),
        "valid_share": valid / changed if changed else float("nan"),
    }


def ranking_sources(own: dict[str, str], rule: dict[str, str], unrelated: dict[str, str]) -> dict[str, dict[str, str]]:
    """``RANKING_SOURCES``: ``unrelated`` kept only where its text is not the episode's own."""
    return {
        "own": own, "rule": rule, "unrelated": {key: text for key, text in unrelated.items() if text != own.get(key)},
        "mirrored": mirrored_skills(own),
    }


def ranking_table(
    policy: Policy, samples: Sequence[StepSample], steps: Sequence[tuple[str, int]], labels: Labels,
    valid_actions: dict[tuple[str, int], Sequence[str]], sources: dict[str, dict[str, str]],
    episodes: Sequence[EpisodeView], batch_size: int = 16,
) -> pd.DataFrame:
    """Every valid action of every ranked step scored without a skill and with each source's
    skill of its episode (``RANKING_COLUMNS``; steps without a sample are left out, and so is
    a source with no skill for the episode)."""
    from hindsight.training.distillation import response_logprobs, skill_augmented_logprobs

    by_step = {(sample.episode_id, sample.step): sample for sample in samples}
    success = {episode.episode_id: bool(episode.success) for episode in episodes}
    played_action = {(episode.episode_id, step.step): concrete_action(step.action) for episode in episodes for step in episode.steps}
    scored: list[tuple[tuple[str, int], str, bool, StepSample]] = []
    for key in steps:
        base = by_step.get(key)
        if base is None:
            continue
        valid = list(dict.fromkeys(str(a) for a in valid_actions.get(key, ())))
        played = played_action.get(key)
        for index, action in enumerate(valid):
            sample_key = KEY_SEPARATOR.join((key[0], str(key[1]), str(index)))
            scored.append((key, action, concrete_action(action) == played, answer_sample(base, policy.tokenizer, action, valid, sample_key)))
    if not scored:
        return pd.DataFrame(columns=list(RANKING_COLUMNS))
    action_samples = [sample for *_, sample in scored]
    plain = response_logprobs(policy.model, action_samples, batch_size, policy.tokenizer.pad_token_id)
    rows = []
    for source, skills in sources.items():
        skill_of_key = {sample.episode_id: skills[key[0]] for key, _, _, sample in scored if key[0] in skills}
        if not skill_of_key:
            continue
        augmented = skill_augmented_logprobs(policy.model, policy.tokenizer, action_samples, skill_of_key, batch_size)
        for (key, action, played, sample), logp_plain, logp_skill in zip(scored, plain, augmented):
            if logp_skill is None:
                continue
            pairs = [(float(p), float(s)) for p, s, choice in zip(logp_plain, logp_skill, sample.choice_positions) if choice]
            valid = {concrete_action(a) for a in valid_actions.get(key, ())}
            rows.append({
                "episode_id": key[0], "success": bool(success.get(key[0], False)), "step": key[1], "action": action,
                "played": played, "optimal": concrete_action(action) in labels[key], "coin_in_view": TAKE_COIN in valid,
                "source": source, "logp_plain": sum(p for p, _ in pairs), "delta": sum(s - p for p, s in pairs),
                "token_gaps": [s - p for p, s in pairs],
            })
    return pd.DataFrame(rows, columns=list(RANKING_COLUMNS))


def _subset(rows: pd.DataFrame, subset: str) -> pd.DataFrame:
    if subset == "won":
        return rows[rows["success"]]
    if subset == "lost":
        return rows[~rows["success"]]
    if subset == "coin_out_of_view":
        return rows[~rows["coin_in_view"]]
    if subset == "played_suboptimal":
        played = rows[rows["played"]]
        bad = set(zip(played.loc[~played["optimal"], "episode_id"], played.loc[~played["optimal"], "step"]))
        return rows[[key in bad for key in zip(rows["episode_id"], rows["step"])]]
    return rows


def _population(rows: pd.DataFrame, population: str) -> pd.DataFrame:
    return rows[rows["played"]] if population == "pooled" else rows


def _cells(part: pd.DataFrame):
    """(population, subset, its rows) for every cell of ``POPULATIONS`` x ``SUBSETS`` with a row."""
    for population in POPULATIONS:
        for subset in SUBSETS:
            rows = _population(_subset(part, subset), population)
            if not rows.empty:
                yield population, subset, rows


def _strata(rows: pd.DataFrame, population: str) -> list[str] | None:
    return [f"{e}{KEY_SEPARATOR}{s}" for e, s in zip(rows["episode_id"], rows["step"])] if population == "within" else None


def ranking_metrics(
    table: pd.DataFrame, prefix: str = "premise", seed: int = 0, *, gate_beta: float = 5.0, opd_coef: float = 0.01,
    resamples: int = 2000,
) -> dict[str, float]:
    """The ranking's figures under ``<prefix>/ranking/``:

    - ``<source>/<population>/<subset>/{auroc,auroc_low,auroc_high,positives,negatives,episodes}``
      (module docstring; a cell without a positive-negative pair is left out), and the same
      for two references on the own skill's rows: ``plain`` ranks by log p(a) (the policy
      alone) and ``teacher`` by log p(a | own skill) (the distillation's teacher), so that a
      shift's AUROC can be read against what the policy already ranks (a skill block that
      only flattens the distribution gives a shift that ranks as ``1 - plain``);
    - ``<source>/pooled/<subset>/gate_push``: ``opd_coef * (E[gate | optimal] - E[gate | suboptimal])``
      over the played actions' non-forced tokens, ``gate = sigmoid(gate_beta * gap)``;
    - ``own_minus_<control>/<population>/<subset>/{difference,low,high,episodes}``: paired
      over the actions both scored, one resampling of episodes for both;
    - ``steps`` (ranked steps scored) and ``played_optimal_share``.
    """
    metrics: dict[str, float] = {}
    if table.empty:
        return metrics
    key = f"{prefix}/ranking"
    own = table[table["source"] == "own"]
    base = own if not own.empty else table[table["source"] == table["source"].iloc[0]]
    metrics[f"{key}/steps"] = float(base[["episode_id", "step"]].drop_duplicates().shape[0])
    played = base[base["played"]]
    metrics[f"{key}/played_optimal_share"] = float(played["optimal"].mean()) if len(played) else float("nan")
    scored = [(source, part, "delta") for source, part in table.groupby("source", sort=False)]
    scored += [("plain", base, "logp_plain"), ("teacher", base.assign(logp_skill=base["logp_plain"] + base["delta"]), "logp_skill")]
    for source, part, column in scored:
        for population, subset, rows in _cells(part):
            found = cluster_bootstrap_auroc(
                rows[column].tolist(), rows["optimal"].tolist(), rows["episode_id"].tolist(), _strata(rows, population),
                resamples=resamples, seed=stream_seed(seed, f"ranking/{source}/{population}/{subset}"), method=INTERVAL,
            )
            if not found.pairs:
                continue
            cell = f"{key}/{source}/{population}/{subset}"
            metrics.update({
                f"{cell}/auroc": found.estimate, f"{cell}/auroc_low": found.low, f"{cell}/auroc_high": found.high,
                f"{cell}/positives": float(found.positives), f"{cell}/negatives": float(found.negatives),
                f"{cell}/episodes": float(found.clusters),
            })
            if population == "pooled" and column == "delta":
                good = [g for gaps in rows.loc[rows["optimal"], "token_gaps"] for g in gaps]
                bad = [g for gaps in rows.loc[~rows["optimal"], "token_gaps"] for g in gaps]
                metrics[f"{cell}/gate_push"] = gate_push(good, bad, gate_beta, opd_coef)
    metrics.update(_paired(table, key, seed, resamples))
    return metrics


def _paired(table: pd.DataFrame, key: str, seed: int, resamples: int) -> dict[str, float]:
    """``own_minus_<control>/...`` of ``ranking_metrics``."""
    metrics: dict[str, float] = {}
    columns = ["episode_id", "step", "action"]
    own = table[table["source"] == "own"]
    for control in CONTROLS:
        other = table[table["source"] == control]
        if own.empty or other.empty:
            continue
        both = own.merge(other[columns + ["delta"]], on=columns, suffixes=("", "_control"))
        for population, subset, rows in _cells(both):
            found = paired_cluster_bootstrap_auroc_difference(
                rows["delta"].tolist(), rows["delta_control"].tolist(), rows["optimal"].tolist(),
                rows["episode_id"].tolist(), _strata(rows, population),
                resamples=resamples, seed=stream_seed(seed, f"ranking/own_minus_{control}/{population}/{subset}"),
                method=INTERVAL,
            )
            if not found.pairs:
                continue
            cell = f"{key}/own_minus_{control}/{population}/{subset}"
            metrics.update({f"{cell}/difference": found.estimate, f"{cell}/low": found.low, f"{cell}/high": found.high,
                            f"{cell}/episodes": float(found.clusters)})
    return metrics

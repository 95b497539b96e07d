"""The premise check's controls: skills that differ from the policy's own in one thing each.

The premise check (``stage1.premise``) re-scores the played actions with the policy's own
skill. A gap alone does not say whether the policy reads the skill's *content* or reacts to
a skill block of that form; each control here changes one of them:

- ``unrelated_skill_sources`` / ``unrelated_control``: another episode's *own* skill, of the
  same outcome (so the same head and the same kind of items: the form held, the content of
  another task), assigned by a seeded derangement of the skilled episodes of each outcome
  in which no episode takes a skill of its own task (``group_id``). Every own skill is given
  to exactly one other episode where the derangement exists, so the unrelated texts are as
  varied as the own ones (``unrelated_metrics``: the share of distinct texts, of skills of
  another task type, and of episodes given one).
- ``same_form_skills``: per step whose played action X the own skill names, the own skill
  with X replaced by another valid action of that step that the skill does not name: the
  same text, item count and position, only the named action wrong. Scored on those steps
  only, it is compared with the own skill's gap on its listed steps.
- ``shuffled_skills``: the own skill's items in another order; a skill with fewer than two
  distinct items has no other order, so where every own skill has one item the control is
  not applicable (``shuffled_metrics``), not silently empty.

``premise_sources`` builds the sources the premise node scores (own, rule and the three
controls) with the controls' assignment metrics; ``valid_actions_by_step`` reads the valid
actions the same-form control and the copy test draw from.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Sequence

import pandas as pd

from hindsight.skills.compact import concrete_action, parse_compact_skill, render_skill, skill_lists_action
from hindsight.skills.episode_views import EpisodeView
from hindsight.stage1.premise import StepSkills, stream_seed

DERANGEMENT_TRIES = 200
"""Seeded random permutations tried before the grouped construction (``_derangement``)."""


def _derangement(pool: Sequence[EpisodeView], rng: random.Random) -> dict[str, str]:
    """Target id -> source id: a permutation of ``pool`` in which no episode takes one of its
    own task (group). A seeded random permutation where one of ``DERANGEMENT_TRIES`` passes;
    otherwise the grouped construction (groups laid out largest first, each member taking
    the one ``m`` places on, ``m`` the largest group's size), which satisfies every target
    when no group holds more than half the pool and leaves out those it cannot."""
    n = len(pool)
    if n < 2:
        return {}
    order = list(range(n))
    for _ in range(DERANGEMENT_TRIES):
        rng.shuffle(order)
        if all(pool[order[i]].group_id != pool[i].group_id for i in range(n)):
            return {pool[i].episode_id: pool[order[i]].episode_id for i in range(n)}
    groups: dict[str, list[int]] = defaultdict(list)
    for index, episode in enumerate(pool):
        groups[episode.group_id].append(index)
    members = list(groups.values())
    for group in members:
        rng.shuffle(group)
    rng.shuffle(members)
    members.sort(key=len, reverse=True)  # stable: equal sizes keep the shuffled order
    layout = [index for group in members for index in group]
    shift = len(members[0])
    sources = {}
    for k, target in enumerate(layout):
        source = layout[(k + shift) % n]
        if pool[source].group_id != pool[target].group_id:
            sources[pool[target].episode_id] = pool[source].episode_id
    return sources


def unrelated_skill_sources(episodes: Sequence[EpisodeView], skill_of: dict[str, str], seed: int) -> dict[str, str]:
    """Target episode id -> the episode whose skill it is given: within each outcome (won,
    lost), a seeded derangement of the episodes in ``skill_of`` in which none takes a skill of
    its own task (``_derangement``). An outcome with one skilled episode, or all of them of
    one task, gives no skill; the result is the same for the same seed."""
    rng = random.Random(seed)
    skilled = [episode for episode in episodes if episode.episode_id in skill_of]
    sources: dict[str, str] = {}
    for outcome in (True, False):
        sources.update(_derangement([episode for episode in skilled if bool(episode.success) == outcome], rng))
    return sources


def unrelated_control(
    episodes: Sequence[EpisodeView], own: dict[str, str], seed: int
) -> tuple[dict[str, str], dict[str, float]]:
    """The unrelated control's skills (episode id -> another episode's own skill,
    ``unrelated_skill_sources``) and ``unrelated_metrics`` of the assignment."""
    sources = unrelated_skill_sources(episodes, own, seed)
    return {target: own[source] for target, source in sources.items()}, unrelated_metrics(episodes, own, sources)


def unrelated_metrics(episodes: Sequence[EpisodeView], own: dict[str, str], sources: dict[str, str]) -> dict[str, float]:
    """What the unrelated control measured with: ``distinct_share`` (distinct skill texts
    given / episodes given one: 1/n would be one fixed text), ``given_share`` (episodes given
    one / episodes with an own skill), ``other_task_type_share`` (given a skill of another
    task type) and ``assigned`` (episodes given one); the shares are NaN when none was given."""
    task_type = {episode.episode_id: episode.task_type for episode in episodes}
    given = len(sources)
    nan = float("nan")
    return {
        "assigned": float(given),
        "distinct_share": len({own[source] for source in sources.values()}) / given if given else nan,
        "given_share": given / len(own) if own else nan,
        "other_task_type_share": (
            sum(task_type.get(source) != task_type.get(target) for target, source in sources.items()) / given if given else nan
        ),
    }


def same_form_skills(
    episodes: Sequence[EpisodeView], own: dict[str, str], valid_actions: dict[tuple[str, int], Sequence[str]], seed: int
) -> StepSkills:
    """The same-form content control: for every step whose played action X the episode's own
    compact skill names, that skill with each item naming X replaced by another valid action
    of the step (seeded choice among those the skill does not name, as a concrete template).

    Args:
        episodes: The played episodes.
        own: Episode id -> its own skill (texts that are not compact skills are left out).
        valid_actions: (episode id, step) -> the valid actions at that step.
        seed: Seed of the choices.

    Returns:
        ``StepSkills`` over the steps that have a replacement (a step whose valid actions are
        all named by the skill has none); ``of_episode`` is the own skill.
    """
    rng = random.Random(seed)
    by_step: dict[tuple[str, int], str] = {}
    for episode in episodes:
        skill = own.get(episode.episode_id)
        parsed = parse_compact_skill(skill) if skill else None
        if parsed is None:
            continue
        head, items = parsed
        named = {concrete_action(item) for item in items}
        for step in episode.steps:
            if not skill_lists_action(skill, step.action):
                continue
            played = concrete_action(step.action)
            others = sorted({concrete_action(action) for action in valid_actions.get((episode.episode_id, step.step), ())} - named)
            if not others:
                continue
            replacement = rng.choice(others)
            swapped = [replacement if concrete_action(item) == played else item for item in items]
            by_step[(episode.episode_id, step.step)] = render_skill(head, swapped)
    return StepSkills(by_step, {episode_id: own[episode_id] for episode_id, _ in by_step})


def shuffled_skills(skill_of_episode: dict[str, str], seed: int = 0) -> dict[str, str]:
    """Each compact skill with its items in another order: the episode's own actions, their
    order lost (the control for what a skill's order carries). The order is a seeded
    permutation that differs from the skill's own; a skill with fewer than two distinct items
    has no other order and is left out, and so is a text that is not a compact skill."""
    rng = random.Random(seed)
    shuffled: dict[str, str] = {}
    for episode_id in sorted(skill_of_episode):
        parsed = parse_compact_skill(skill_of_episode[episode_id])
        if parsed is None or len(set(parsed[1])) < 2:
            continue
        head, items = parsed
        order = list(items)
        for _ in range(20):
            rng.shuffle(order)
            if order != items:
                break
        else:  # an unlucky seed: a rotation differs whenever two items do
            order = items[1:] + items[:1]
        shuffled[episode_id] = render_skill(head, order)
    return shuffled


def shuffled_metrics(own: dict[str, str], shuffled: dict[str, str]) -> dict[str, float]:
    """``applicable_share``: the share of own skills that have another order (two distinct
    items or more; 0 means the shuffled control is not applicable, NaN that there is no own
    skill); ``applicable``: how many."""
    return {"applicable": float(len(shuffled)), "applicable_share": len(shuffled) / len(own) if own else float("nan")}


def valid_actions_by_step(table: pd.DataFrame) -> dict[tuple[str, int], list[str]]:
    """(episode id, step) -> the valid actions at that step, from a trajectory table
    (``valid_actions``; a table without the column gives none)."""
    if "valid_actions" not in table:
        return {}
    return {
        (str(episode_id), int(step)): [str(action) for action in actions]
        for episode_id, step, actions in zip(table["episode_id"], table["step"], table["valid_actions"])
    }


def premise_sources(
    episodes: Sequence[EpisodeView], own: dict[str, str], rule: dict[str, str],
    valid_actions: dict[tuple[str, int], Sequence[str]], seed: int,
) -> tuple[dict[str, dict[str, str] | StepSkills], dict[str, float]]:
    """The premise check's skill sources: ``own``, ``rule``, ``unrelated``
    (``unrelated_control``), ``same_form`` (``same_form_skills``) and ``shuffled``
    (``shuffled_skills``), each control drawn on a seed of its own (``stream_seed``), and
    the controls' metrics (``unrelated/...``, ``same_form/steps``, ``shuffled/...``; keys
    without a prefix)."""
    unrelated, unrelated_figures = unrelated_control(episodes, own, stream_seed(seed, "unrelated"))
    same_form = same_form_skills(episodes, own, valid_actions, stream_seed(seed, "same_form"))
    shuffled = shuffled_skills(own, seed)
    metrics = {f"unrelated/{key}": value for key, value in unrelated_figures.items()}
    metrics["same_form/steps"] = float(len(same_form.by_step))
    metrics.update({f"shuffled/{key}": value for key, value in shuffled_metrics(own, shuffled).items()})
    sources = {"own": own, "rule": rule, "unrelated": unrelated, "same_form": same_form, "shuffled": shuffled}
    return sources, metrics

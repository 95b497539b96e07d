"""Counterfactual skill use: Stage-1 examples in which only the skill tells the action.

Skill-conditioned behaviour cloning (``training.episode_sft.skill_conditioned``) shows each
expert step with its episode's skill, but the expert's action is predictable from the state
alone, so a policy that ignores the skill loses nothing: the premise check measured exactly
that (the rule teacher's correct skill lowers the played actions as much as an unrelated
one). Here the skill is made necessary. For an expert step whose action ``a`` the ``do:``
skill lists, another valid action ``b`` of the same state takes its place in the skill and
becomes the target:

    skill  do: read cookbook; take knife; slice carrot with knife; prepare meal; eat meal
    state  (the expert took "take knife"; "take cookbook" is also valid)
    ->     do: read cookbook; take cookbook; slice carrot with knife; prepare meal; eat meal
    target take cookbook

The state and history fit both skills, so the only way to predict the target is to read the
skill and find the listed action the state allows. ``b`` is chosen by a seeded draw among the
state's valid actions the skill does not list, preferring those with ``a``'s verb (the skill
then decides between objects, not verbs), never an information action ("look", "examine",
"inventory"). Steps whose action the skill does not list, ``avoid:`` skills and steps with no
candidate give no example. The examples never appear without their skill, so the plain
behaviour-cloning data is unchanged; the shared weights still carry the swapped targets into
the plain policy (measured in docs/results.md, "SEED with the policy's own skills": at 300
Stage-1 steps the expert's actions lose 0.16-0.23 nats/token without the skill).

Two more kinds teach which item of a skill fits the state, and when a skill does not fit:

- **Order** (``reorder_examples``, kind ``REORDER_KIND``): a swap restricted to steps where
  the state leaves the choice open. At an expert step whose action ``a`` the skill lists at
  position i and whose state also allows a later listed item ``b`` (position j > i), the
  two items trade places and ``b`` becomes the target. State and history fit both, so only
  the skill's order decides: the lesson is "the first listed item the state allows", which
  is what picks the played action out of a hindsight skill that lists several valid ones.
- **Ignoring** (``unrelated_skill_examples``, kind ``UNRELATED_KIND``): every expert step
  with the skill of an episode of another task type (``skills.assignment``), the expert's
  action still the target: a skill that does not fit the state changes nothing.

Measured (docs/results.md, "SEED with the policy's own skills"): with both, the skill no longer
overrides the state and the policy reads the order where it is unsure of the action, but
the premise's mean gap on won episodes stays below 0 (-0.074 at best, 60 held-out tasks).
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

import pandas as pd
from pandas.api.types import is_list_like

from hindsight.skills.action_roles import is_information_action, parse_action_structure
from hindsight.skills.assignment import unrelated_sources
from hindsight.skills.compact import DO_HEAD, concrete_action, parse_compact_skill, render_skill
from hindsight.skills.episode_views import EpisodeView
from hindsight.policy.skill_injection import inject_skill
from hindsight.training.episode_sft import skill_conditioned

COUNTERFACTUAL_KIND = "skill_swap"
REORDER_KIND = "skill_reorder"
UNRELATED_KIND = "unrelated_skill_bc"


def replacement_candidates(skill: str, action: str, valid_actions: Sequence[str]) -> list[str]:
    """The valid actions that may replace ``action`` in ``skill``: not listed in it, not
    ``action``, not an information action; those with ``action``'s verb when any."""
    parsed = parse_compact_skill(skill)
    if parsed is None:
        return []
    listed = {concrete_action(item) for item in parsed[1]}
    others = [
        candidate for candidate in dict.fromkeys(valid_actions)
        if concrete_action(candidate) not in listed and concrete_action(candidate) != concrete_action(action)
        and not is_information_action(candidate)
    ]
    verb = parse_action_structure(action).verb
    same_verb = [candidate for candidate in others if parse_action_structure(candidate).verb == verb]
    return same_verb or others


def swap_listed_action(skill: str, action: str, replacement: str) -> str | None:
    """``skill`` with its first item naming ``action`` replaced by ``replacement``; None when
    the skill is not a ``do:`` skill or does not list ``action``."""
    parsed = parse_compact_skill(skill)
    if parsed is None or parsed[0] != DO_HEAD:
        return None
    head, templates = parsed
    target = concrete_action(action)
    for index, template in enumerate(templates):
        if concrete_action(template) == target:
            return render_skill(head, templates[:index] + [concrete_action(replacement)] + templates[index + 1 :])
    return None


def counterfactual_examples(examples: pd.DataFrame, skill_of: dict[str, str], seed: int) -> pd.DataFrame:
    """Counterfactual skill-use examples from step-wise behaviour-cloning rows.

    Args:
        examples: Behaviour-cloning examples of the step-wise layout (columns ``episode_id``,
            ``prompt``, ``response``, ``valid_actions``).
        skill_of: Episode id -> its skill (the skills skill-conditioned behaviour cloning uses).
        seed: Seed of the draw of each replacement.

    Returns:
        The rows that have a counterfactual: the swapped skill injected into ``prompt``, the
        replacement as ``response``, kind ``COUNTERFACTUAL_KIND``, and the skill that was
        shown in ``skill``.

    Raises:
        ValueError: Multi-turn rows (one skill per sequence header cannot differ per step),
            or rows without ``valid_actions``.
    """
    return _edited_examples(
        examples, skill_of, seed, "stage1.counterfactual_repeat", COUNTERFACTUAL_KIND, replacement_candidates, swap_listed_action
    )


def later_listed_valid(skill: str, action: str, valid_actions: Sequence[str]) -> list[str]:
    """The valid actions (as the state writes them) that a ``do:`` skill lists after its
    first item naming ``action``; none of them ``action`` or an information action."""
    parsed = parse_compact_skill(skill)
    if parsed is None or parsed[0] != DO_HEAD:
        return []
    templates = [concrete_action(template) for template in parsed[1]]
    target = concrete_action(action)
    if target not in templates:
        return []
    valid = {concrete_action(candidate): candidate for candidate in valid_actions if not is_information_action(candidate)}
    later = templates[templates.index(target) + 1 :]
    return [valid[item] for item in dict.fromkeys(later) if item in valid and item != target]


def reorder_listed_actions(skill: str, action: str, later: str) -> str | None:
    """``skill`` with its first item naming ``action`` and its first item naming ``later``
    (listed after it) trading places; None when either is missing or ``later`` comes first."""
    parsed = parse_compact_skill(skill)
    if parsed is None or parsed[0] != DO_HEAD:
        return None
    head, templates = parsed
    concrete = [concrete_action(template) for template in templates]
    first, second = concrete_action(action), concrete_action(later)
    if first not in concrete or second not in concrete[concrete.index(first) + 1 :]:
        return None
    i = concrete.index(first)
    j = concrete.index(second, i + 1)
    reordered = list(templates)
    reordered[i], reordered[j] = templates[j], templates[i]
    return render_skill(head, reordered)


def reorder_examples(examples: pd.DataFrame, skill_of: dict[str, str], seed: int) -> pd.DataFrame:
    """Order examples from step-wise behaviour-cloning rows: at each expert step whose state
    allows a later item of its skill (``later_listed_valid``), a seeded draw of one such item
    trades places with the expert's action in the skill and becomes the target (kind
    ``REORDER_KIND``; the skill shown in ``skill``). Same columns and refusals as
    ``counterfactual_examples``."""
    return _edited_examples(
        examples, skill_of, seed, "stage1.reorder_repeat", REORDER_KIND, later_listed_valid, reorder_listed_actions
    )


def unrelated_skill_examples(examples: pd.DataFrame, skill_of: dict[str, str]) -> pd.DataFrame:
    """Ignoring examples: the behaviour-cloning rows of every episode that has a skill, each
    episode given the skill of an episode of another task type (``unrelated_sources``; another
    task where no other type has one), the expert's action still the target (kind
    ``UNRELATED_KIND``; either layout, a multi-turn sequence keyed apart from the
    skill-conditioned one)."""
    if not len(examples):
        return examples.assign(kind=UNRELATED_KIND)
    for column in ("episode_id", "group_id", "task_type"):
        if column not in examples:
            raise ValueError(f"'bc_examples' has no '{column}' column; rebuild it: {_REBUILD}")
    firsts = examples.drop_duplicates("episode_id")
    episodes = [
        EpisodeView(episode_id=str(row.episode_id), group_id=str(row.group_id), task="", success=True, steps=(),
                    task_type=str(row.task_type))
        for row in firsts.itertuples(index=False)
    ]
    with_skill = {episode.episode_id for episode in episodes if skill_of.get(episode.episode_id)}
    sources = unrelated_sources(episodes, with_skill, targets=with_skill)
    given = skill_conditioned(examples, {target: skill_of[source] for target, source in sources.items()})
    if "sequence" in given:
        given["sequence"] = [f"{UNRELATED_KIND}/{key}" if isinstance(key, str) and key else key for key in given["sequence"]]
    return given.assign(kind=UNRELATED_KIND)


_REBUILD = "kedro run --pipeline behaviour_cloning --nodes behaviour_cloning.make_behaviour_cloning_examples"


def _edited_examples(
    examples: pd.DataFrame, skill_of: dict[str, str], seed: int, setting: str, kind: str,
    candidates_of: Callable[[str, str, list[str]], list[str]], edit: Callable[[str, str, str], str | None],
) -> pd.DataFrame:
    """For each step-wise row with a skill: a seeded draw among ``candidates_of(skill, action,
    valid_actions)`` becomes the target, shown with ``edit(skill, action, target)`` injected
    into the prompt (rows without a candidate or an edit are left out)."""
    rng = random.Random(seed)
    rows = []
    for row, skill in _steps_with_skill(examples, skill_of, setting):
        candidates = candidates_of(skill, row.response, list(row.valid_actions))
        if not candidates:
            continue
        target = rng.choice(candidates)
        edited = edit(skill, row.response, target)
        if edited is None:
            continue
        rows.append({**row._asdict(), "prompt": inject_skill(row.prompt, edited), "response": target, "kind": kind, "skill": edited})
    columns = list(examples.columns) + [column for column in ("skill",) if column not in examples.columns]
    return pd.DataFrame(rows, columns=columns)


def _steps_with_skill(examples: pd.DataFrame, skill_of: dict[str, str], setting: str):
    """(row, skill) for each step-wise row whose episode has a skill, after checking the table:
    multi-turn rows (one skill header per sequence cannot change per step) and tables without
    ``valid_actions`` are refused naming ``setting`` / the dataset, a bad row by its index."""
    if "header" in examples and examples["header"].notna().any():
        raise ValueError(
            f"{setting} needs step-wise behaviour-cloning examples (rollout.layout: stepwise); "
            "'bc_examples' holds multi-turn sequences, whose one skill header cannot change per step"
        )
    if len(examples) and "valid_actions" not in examples:
        raise ValueError(f"'bc_examples' has no 'valid_actions' column (made before it had one); rebuild it: {_REBUILD}")
    for index, row in zip(examples.index, examples.itertuples(index=False)):
        skill = skill_of.get(str(row.episode_id))
        if not skill:
            continue
        actions_ok = is_list_like(row.valid_actions) and all(isinstance(action, str) for action in row.valid_actions)
        if not isinstance(row.response, str) or not actions_ok:
            field = "response" if not isinstance(row.response, str) else "valid_actions"
            raise ValueError(
                f"'bc_examples' row {index} (episode {row.episode_id!r}): field '{field}' must be "
                f"{'a string' if field == 'response' else 'a list of action strings'}, got {getattr(row, field)!r}"
            )
        yield row, skill

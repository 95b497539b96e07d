"""Counterfactual skill use (``stage1.counterfactual``): on real expert episodes, each example
swaps the listed expert action for another valid action of the same state, and only the
skill names the new target; order examples let only the skill's order pick between two
listed actions the state allows; ignoring examples pair expert steps with another task
type's skill; the Stage-1 mixture adds each only when asked."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.config import ProjectConfig, Stage1Config
from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples
from hindsight.pipelines.stage1.nodes import stage1_examples
from hindsight.skills.compact import compact_skill, parse_compact_skill, skill_lists_action
from hindsight.stage1.counterfactual import (
    COUNTERFACTUAL_KIND,
    REORDER_KIND,
    UNRELATED_KIND,
    counterfactual_examples,
    later_listed_valid,
    reorder_examples,
    reorder_listed_actions,
    replacement_candidates,
    swap_listed_action,
    unrelated_skill_examples,
)
from hindsight.skills.episode_views import episodes_from_table
from hindsight.policy.skill_injection import inject_skill


def test_a_swap_replaces_the_listed_item_only():
    skill = "do: read cookbook; take knife; slice carrot with knife; eat meal"
    assert swap_listed_action(skill, "Take  Knife", "take cookbook") == (
        "do: read cookbook; take cookbook; slice carrot with knife; eat meal"
    )
    assert swap_listed_action(skill, "open fridge", "take cookbook") is None  # not listed
    assert swap_listed_action("avoid: take knife", "take knife", "take cookbook") is None  # an avoidance rule


def test_candidates_prefer_the_actions_verb_and_skip_listed_and_information_actions():
    skill = "do: read cookbook; take knife; eat meal"
    valid = ["look around", "examine knife", "take knife", "take cookbook", "take carrot", "open fridge", "read cookbook"]
    assert replacement_candidates(skill, "take knife", valid) == ["take cookbook", "take carrot"]
    assert replacement_candidates(skill, "eat meal", valid) == ["take cookbook", "take carrot", "open fridge"]
    assert replacement_candidates("not a skill", "take knife", valid) == []


@pytest.fixture(scope="module")
def expert_examples(recorded_tables):
    table = pd.concat([recorded_tables["twc_gold"], recorded_tables["cooking_gold"]], ignore_index=True)
    bc = behaviour_cloning_examples(table, ProjectConfig())
    skills = {episode.episode_id: compact_skill(episode, concrete=True) for episode in episodes_from_table(table)}
    return bc, skills


def test_only_the_skill_names_the_counterfactual_target(expert_examples):
    bc, skills = expert_examples
    swapped = counterfactual_examples(bc, skills, seed=0)
    assert len(swapped) and (swapped["kind"] == COUNTERFACTUAL_KIND).all()
    expert = bc.set_index(["episode_id", "step"])
    for row in swapped.itertuples(index=False):
        original = expert.loc[(row.episode_id, row.step)]
        assert row.response != original["response"] and row.response in original["valid_actions"]
        assert skill_lists_action(row.skill, row.response) and not skill_lists_action(row.skill, original["response"])
        assert skill_lists_action(skills[row.episode_id], original["response"])
        assert row.prompt == inject_skill(original["prompt"], row.skill)  # the state and history are the expert's
    assert counterfactual_examples(bc, skills, seed=0).equals(swapped)  # one seed, one draw


def test_the_mixture_adds_counterfactual_copies_when_asked(expert_examples):
    bc, skills = expert_examples
    skill_table = pd.DataFrame({"episode_id": list(skills), "skill": list(skills.values()), "accepted": True, "parse_ok": True})
    analyzer = pd.DataFrame({"prompt": ["Analyse.\n"], "response": ["do: look"], "episode_id": ["x"], "held_out": [False]})
    plain = stage1_examples(bc, bc.iloc[:0], skill_table, analyzer, Stage1Config())
    assert COUNTERFACTUAL_KIND not in set(plain["kind"])
    mixture = stage1_examples(bc, bc.iloc[:0], skill_table, analyzer, Stage1Config(counterfactual_repeat=2))
    counts = mixture["kind"].value_counts()
    assert counts[COUNTERFACTUAL_KIND] == 2 * len(counterfactual_examples(bc, skills, seed=0))
    assert counts["bc"] == counts["skill_bc"] == len(bc)
    with pytest.raises(ValueError, match="counterfactual_repeat"):
        Stage1Config(counterfactual_repeat=-1)


def test_multiturn_rows_and_old_tables_are_refused_by_name():
    multiturn = pd.DataFrame({"episode_id": ["e"], "prompt": ["Current observation: a"], "response": ["take x"],
                              "header": ["Task: t"], "valid_actions": [["take x", "take y"]]})
    with pytest.raises(ValueError, match="stage1.counterfactual_repeat needs step-wise"):
        counterfactual_examples(multiturn, {"e": "do: take x"}, seed=0)
    old = pd.DataFrame({"episode_id": ["e"], "prompt": ["Task: t"], "response": ["take x"]})
    with pytest.raises(ValueError, match="'bc_examples' has no 'valid_actions'"):
        counterfactual_examples(old, {"e": "do: take x"}, seed=0)


def test_a_row_without_its_actions_is_named():
    rows = pd.DataFrame({"episode_id": ["e", "e"], "prompt": ["Task: t", "Task: t"], "response": ["take x", "take y"],
                         "valid_actions": [["take x", "take z"], None]})
    with pytest.raises(ValueError, match=r"'bc_examples' row 1 \(episode 'e'\): field 'valid_actions' must be a list"):
        counterfactual_examples(rows, {"e": "do: take x; take y"}, seed=0)
    rows.at[1, "valid_actions"] = ["take y", None]
    with pytest.raises(ValueError, match=r"row 1 \(episode 'e'\): field 'valid_actions' must be a list of action strings"):
        reorder_examples(rows, {"e": "do: take x; take y"}, seed=0)


def test_a_reorder_trades_the_expert_item_with_a_later_one_the_state_allows():
    skill = "do: take potato; take carrot; slice carrot with knife; eat meal"
    valid = ["look around", "take potato", "take carrot", "take knife", "eat meal", "inventory"]
    assert later_listed_valid(skill, "Take Potato", valid) == ["take carrot", "eat meal"]
    assert later_listed_valid(skill, "take carrot", valid) == ["eat meal"]  # items before it do not count
    assert later_listed_valid(skill, "take knife", valid) == []  # not listed
    assert later_listed_valid("avoid: take potato; take carrot", "take potato", valid) == []
    assert reorder_listed_actions(skill, "take potato", "eat meal") == (
        "do: eat meal; take carrot; slice carrot with knife; take potato"
    )
    assert reorder_listed_actions(skill, "take carrot", "take potato") is None  # listed before it


def _position(skill: str, action: str) -> int:
    return [item.lower() for item in parse_compact_skill(skill)[1]].index(action.lower())


def test_only_the_skills_order_names_the_order_target(expert_examples):
    bc, skills = expert_examples
    reordered = reorder_examples(bc, skills, seed=0)
    assert len(reordered) and (reordered["kind"] == REORDER_KIND).all()
    expert = bc.set_index(["episode_id", "step"])
    for row in reordered.itertuples(index=False):
        original = expert.loc[(row.episode_id, row.step)]
        assert row.response != original["response"] and row.response in original["valid_actions"]
        own = skills[row.episode_id]
        assert _position(own, original["response"]) < _position(own, row.response)  # the expert's came first
        assert _position(row.skill, row.response) < _position(row.skill, original["response"])  # now the target does
        assert sorted(parse_compact_skill(row.skill)[1]) == sorted(parse_compact_skill(own)[1])  # same items
        assert row.prompt == inject_skill(original["prompt"], row.skill)
    assert reorder_examples(bc, skills, seed=0).equals(reordered)


def test_ignoring_examples_keep_the_expert_action_under_another_types_skill(expert_examples):
    bc, skills = expert_examples
    ignoring = unrelated_skill_examples(bc, skills)
    assert len(ignoring) == len(bc) and (ignoring["kind"] == UNRELATED_KIND).all()
    type_of = dict(zip(bc["episode_id"], bc["task_type"]))
    given_by_type = {}
    for row, expert in zip(ignoring.itertuples(index=False), bc.itertuples(index=False)):
        assert row.response == expert.response
        shown = [episode for episode, skill in skills.items() if inject_skill(expert.prompt, skill) == row.prompt]
        assert shown and all(type_of[episode] != row.task_type for episode in shown)
        given_by_type.setdefault(row.task_type, set()).update(shown)
    assert len(given_by_type) == 2  # both games were given the other's skills


def test_the_mixture_adds_order_and_ignoring_copies_when_asked(expert_examples):
    bc, skills = expert_examples
    skill_table = pd.DataFrame({"episode_id": list(skills), "skill": list(skills.values()), "accepted": True, "parse_ok": True})
    analyzer = pd.DataFrame({"prompt": ["Analyse.\n"], "response": ["do: look"], "episode_id": ["x"], "held_out": [False]})
    plain = stage1_examples(bc, bc.iloc[:0], skill_table, analyzer, Stage1Config())
    assert not {REORDER_KIND, UNRELATED_KIND} & set(plain["kind"])
    mixture = stage1_examples(bc, bc.iloc[:0], skill_table, analyzer, Stage1Config(reorder_repeat=2, unrelated_repeat=1))
    counts = mixture["kind"].value_counts()
    assert counts[REORDER_KIND] == 2 * len(reorder_examples(bc, skills, seed=0))
    assert counts[UNRELATED_KIND] == len(bc)
    with pytest.raises(ValueError, match="'bc_examples' has no 'task_type' column"):
        unrelated_skill_examples(bc.drop(columns=["task_type"]), skills)
    for name in ("reorder_repeat", "unrelated_repeat"):
        with pytest.raises(ValueError, match=name):
            Stage1Config(**{name: -1})
    multiturn = pd.DataFrame({"episode_id": ["e"], "prompt": ["a"], "response": ["take x"], "header": ["Task: t"],
                              "valid_actions": [["take x", "take y"]]})
    with pytest.raises(ValueError, match="stage1.reorder_repeat needs step-wise"):
        reorder_examples(multiturn, {"e": "do: take x; take y"}, seed=0)


def test_ignoring_examples_in_the_multiturn_layout_are_sequences_of_their_own(recorded_tables):
    from dataclasses import replace

    project = ProjectConfig()
    project = replace(project, rollout=replace(project.rollout, layout="multiturn"))
    table = pd.concat([recorded_tables["twc_gold"], recorded_tables["cooking_gold"]], ignore_index=True)
    bc = behaviour_cloning_examples(table, project)
    skills = {episode.episode_id: compact_skill(episode, concrete=True) for episode in episodes_from_table(table)}
    ignoring = unrelated_skill_examples(bc, skills)
    assert len(ignoring) == len(bc) and (ignoring["response"].to_numpy() == bc["response"].to_numpy()).all()
    assert set(ignoring["sequence"]).isdisjoint(set(bc["sequence"]) | {f"skill_bc/{e}" for e in bc["episode_id"]})
    for row in ignoring.drop_duplicates("sequence").itertuples(index=False):
        own, other = skills[row.episode_id], next(s for e, s in skills.items() if e != row.episode_id)
        assert other in row.header and own not in row.header

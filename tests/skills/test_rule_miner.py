"""The rule miner on real TextWorldExpress episodes (see conftest.recorded_tables)."""

import pandas as pd
import pytest

from hindsight.skills import RuleMinerTeacher, episodes_from_table, parse_rate
from hindsight.skills.action_roles import abstract_action

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def records(recorded_tables):
    table = pd.concat(recorded_tables.values(), ignore_index=True)
    episodes = episodes_from_table(table)
    return {record.episode_id: record for record in RuleMinerTeacher().write_skills(episodes)}, table


def test_twc_gold_workflow_names_roles_not_objects(records):
    by_episode, table = records
    record = by_episode["twc-gold"]
    assert record.success and record.parse_ok and record.teacher == "rule_miner"
    skill = record.skill
    assert "take <object>" in skill and "put <object> in <container>" in skill
    assert skill.index("take <object>") < skill.index("put <object> in <container>")
    assert 'do "take <object>" before "put <object> in <container>"' in skill
    object_words = {word.lower() for action in table[table.episode_id == "twc-gold"].action
                    for word in action.split()[1:] if word not in ("in", "on")}
    assert object_words  # e.g. dirty, teal, dress, laundry, basket
    assert not any(f" {word} " in f" {skill.lower()} " for word in object_words)
    assert "look around" not in skill  # information actions are not part of the workflow


def test_cookingworld_gold_workflow_keeps_task_words_and_enabling_steps(records):
    record = records[0]["cooking-gold"]
    skill = record.skill
    # "cookbook" and "meal" are words of the task text; "open <container>" enables the takes
    for stage in ("read cookbook", "open <container>", "take <object>", "prepare meal", "eat meal"):
        assert stage in skill
    assert skill.index("read cookbook") < skill.index("prepare meal") < skill.index("eat meal")
    assert "bell pepper" not in skill and "fridge" not in skill


def test_failure_gives_an_avoidance_rule_with_invalid_actions_and_the_loop(records):
    record = records[0]["twc-failure"]
    assert not record.success and record.parse_ok
    assert record.skill.startswith("Avoid ")
    assert '"eat the moon"' in record.skill and '"take unicorn"' in record.skill
    assert '"look around" x5' in record.skill
    assert "valid-action list" in record.skill
    assert 'progress stopped after step 2 ("take <object>")' in record.summary
    assert "3 invalid actions" in record.summary


def test_every_rule_miner_output_goes_through_the_parser(records):
    by_episode, _ = records
    assert parse_rate(list(by_episode.values())) == 1.0
    assert all(record.raw_output.startswith("{") for record in by_episode.values())


@pytest.mark.parametrize(
    ("action", "abstract"),
    [
        ("put dirty teal dress in laundry basket", "put <object> in <container>"),
        ("take knife from cutlery drawer", "take <object> from <container>"),
        ("open fridge", "open <container>"),
        ("cook yellow bell pepper with stove", "cook <ingredient> with <tool>"),
        ("cook yellow bell pepper in oven", "cook <ingredient> in <appliance>"),
        ("slice carrot with knife", "slice <ingredient> with <tool>"),
        ("go north", "go <direction>"),
        ("move to living room", "move to <location>"),
        ("open door to west", "open <door> to <direction>"),
        ("put apple on table", "put <object> on <surface>"),
        ("look around", "look around"),
        ("pick up apple", "pick up <object>"),
    ],
)
def test_action_abstraction(action, abstract):
    assert abstract_action(action) == abstract


def test_task_words_stay_literal():
    assert abstract_action("eat meal", {"cook", "a", "meal"}) == "eat meal"
    assert abstract_action("eat apple", {"cook", "a", "meal"}) == "eat <object>"

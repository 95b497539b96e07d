"""Fact extraction on the real environments: known start facts, facts that change along the
gold path, and reading facts leaves the episode as it was."""

from __future__ import annotations

import pytest

from hindsight.envs import EnvironmentConfigError, EnvironmentSpec, make_env
from hindsight.state2state.extractors import extract_facts
from hindsight.state2state.facts import describe_fact, goal_reached, goal_text, make_fact, parse_fact

pytestmark = pytest.mark.filterwarnings("ignore:Game .* is not fully supported")


def test_fact_strings_parse_describe_and_match():
    fact = make_fact("in", "Clean  Brown Shirt", "wardrobe")
    assert fact == "in(clean brown shirt, wardrobe)"
    assert parse_fact(fact) == ("in", ("clean brown shirt", "wardrobe"))
    assert describe_fact("at(agent, kitchen)") == "you are in the kitchen"
    assert describe_fact("carries(knife)") == "you carry the knife"
    assert describe_fact("open(fridge)") == "the fridge is open"
    assert goal_text(["open(fridge)", "carries(knife)"]) == (
        "Your task is to reach a state where you carry the knife and the fridge is open."
    )
    assert goal_reached({"open(fridge)"}, {"open(fridge)", "carries(knife)"})
    assert not goal_reached({"open(fridge)", "carries(egg)"}, {"open(fridge)", "carries(knife)"})
    with pytest.raises(ValueError, match="Not a fact"):
        parse_fact("the fridge is open")


def test_textworldexpress_facts_follow_the_gold_path(twc_spec):
    env = make_env(twc_spec)
    env.reset(0, "train")
    start = extract_facts(env)
    assert start == {
        "at(agent, bedroom)", "closed(chest of drawers)", "closed(wardrobe)",
        "in(clean blue t-shirt, bedroom)", "in(clean brown shirt, bedroom)",
    }
    for action in ["take clean brown shirt", "open wardrobe", "put clean brown shirt in wardrobe"]:
        env.step(action)
    now = extract_facts(env)
    assert now - start == {"in(clean brown shirt, wardrobe)", "open(wardrobe)"}
    assert start - now == {"closed(wardrobe)", "in(clean brown shirt, bedroom)"}
    env.close()


def test_reading_facts_does_not_change_the_episode(twc_spec):
    reader, plain = make_env(twc_spec), make_env(twc_spec)
    reader.reset(1, "train")
    plain.reset(1, "train")
    gold = plain.gold_actions()
    for action in gold:
        first = extract_facts(reader)
        assert extract_facts(reader) == first
        read_result = reader.step(action)
        plain_result = plain.step(action)
        assert read_result[:4] == plain_result[:4]
        assert read_result[4] == plain_result[4]
    assert read_result[4]["won"] and read_result[4]["moves"] == len(gold)
    reader.close()
    plain.close()


def test_textworldexpress_games_without_a_world_are_refused_by_name():
    env = make_env(EnvironmentSpec("textworldexpress", "arithmetic", {}))
    env.reset(0, "train")
    with pytest.raises(EnvironmentConfigError, match="'arithmetic' has no rooms or objects"):
        extract_facts(env)
    env.close()


def test_cookingworld_facts_include_object_states():
    spec = EnvironmentSpec(
        "textworldexpress", "cookingworld",
        {"numLocations": 1, "numIngredients": 2, "numDistractorItems": 2, "includeDoors": 0, "limitInventorySize": 0},
    )
    env = make_env(spec)
    env.reset(0, "train")
    start = extract_facts(env)
    assert {"in(knife, counter)", "in(red apple, counter)", "closed(fridge)"} <= start
    for action in ["take knife", "take red apple", "slice red apple"]:
        env.step(action)
    now = extract_facts(env)
    assert {"carries(knife)", "carries(red apple)", "sliced(red apple)"} <= now
    assert "in(red apple, counter)" not in now
    env.close()


def test_textworld_facts_from_its_state_tracking(tmp_path):
    spec = EnvironmentSpec(
        "textworld", "custom", {"world_size": 2, "nb_objects": 3, "quest_length": 2, "cache_dir": str(tmp_path)}
    )
    env = make_env(spec)
    env.reset(0, "train")
    start = extract_facts(env)
    assert "at(agent, cellar)" in start and "in(cloak, display)" in start and "locked(locker)" in start
    assert not any(fact.startswith(("north_of", "free", "link")) for fact in start)
    gold = env.gold_actions()
    assert gold == ["take cloak from display", "drop cloak"]
    env.step(gold[0])
    assert "carries(cloak)" in extract_facts(env)
    env.step(gold[1])
    now = extract_facts(env)
    assert now - start == {"in(cloak, cellar)"} and start - now == {"in(cloak, display)"}
    env.close()


def test_scienceworld_facts_from_its_object_tree():
    env = make_env(EnvironmentSpec("scienceworld", "boil", {}))
    env.reset(env.seeds("train", 1)[0], "train")
    start = extract_facts(env)
    assert "at(agent, hallway)" in start and "closed(cupboard)" in start
    assert not any("terminal" in fact for fact in start)
    for action in env.gold_actions()[:9]:  # to the kitchen, thermometer, pot into the sink, sink on
        env.step(action)
    now = extract_facts(env)
    assert {"at(agent, kitchen)", "carries(thermometer)", "in(metal pot, sink)", "open(cupboard)", "on(sink)"} <= now
    assert "in(water, metal pot)" in now - start
    env.close()

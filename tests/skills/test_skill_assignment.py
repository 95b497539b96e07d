"""The unrelated-skill control's assignment (``skills.assignment``) on real episodes: an
episode never gets a skill written for its own task type while the batch has another type
with a skill, never its own skill, and the metrics say what happened."""

from __future__ import annotations

import dataclasses
import itertools

import pandas as pd
import pytest

from hindsight.skills.assignment import assigned_skills, unrelated_skills, unrelated_sources
from hindsight.skills.episode_views import episodes_from_table

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def real_episodes(recorded_tables):
    """twc gold, twc failure (same task as the gold one) and cookingworld gold."""
    table = pd.concat([recorded_tables[name] for name in ("twc_gold", "twc_failure", "cooking_gold")], ignore_index=True)
    episodes = {episode.episode_id: episode for episode in episodes_from_table(table)}
    assert {episode.task_type for episode in episodes.values()} == {"twc", "cookingworld"}
    return episodes


def batch(real_episodes, layout: str):
    """Episodes in the order of ``layout`` (t: a twc episode, c: a cookingworld one), each a
    copy of a real episode under its own id, alternating between tasks of its type."""
    twc = itertools.cycle([real_episodes["twc-gold"], real_episodes["twc-failure"]])
    episodes = []
    for index, kind in enumerate(layout):
        source = next(twc) if kind == "t" else real_episodes["cooking-gold"]
        group = f"{source.group_id}/{index % 3}"  # several tasks per type
        episodes.append(dataclasses.replace(source, episode_id=f"{kind}{index}", group_id=group))
    return episodes


@pytest.mark.parametrize("layout", ["tc", "tctc", "ttttc", "tcccc", "tctctc", "ttcct", "cttttttt"])
def test_no_episode_gets_a_skill_of_its_own_task_type_when_another_type_has_one(real_episodes, layout):
    episodes = batch(real_episodes, layout)
    skill_of = {episode.episode_id: f"skill written for {episode.episode_id}" for episode in episodes}
    kind = {episode.episode_id: episode.task_type for episode in episodes}
    sources = unrelated_sources(episodes, skill_of)
    assert set(sources) == set(skill_of)
    assert all(kind[source] != kind[target] for target, source in sources.items())
    skills, metrics = assigned_skills(episodes, skill_of, "unrelated")
    assert all(skills[target] == skill_of[source] for target, source in sources.items())
    assert metrics == {"opd/skill_unrelated_share": 1.0, "opd/skill_reassigned_share": 1.0}
    # the skills spread over the other type's episodes: with k of them, each gives its skill
    for task_type in set(kind.values()):
        givers = [e for e in skill_of if kind[e] != task_type]
        takers = [t for t in sources if kind[t] == task_type]
        used = {sources[t] for t in takers}
        assert len(used) == min(len(givers), len(takers))


def test_only_episodes_with_a_skill_give_or_take_one(real_episodes):
    episodes = batch(real_episodes, "ttcct")
    skill_of = {"t0": "take first", "c2": "cook first", "t4": "look first"}  # t1 and c3 did not parse
    skills, metrics = assigned_skills(episodes, skill_of, "unrelated")
    assert skills == {"t0": "cook first", "c2": skill_of[unrelated_sources(episodes, skill_of)["c2"]], "t4": "cook first"}
    assert skills["c2"] in ("take first", "look first")
    assert metrics["opd/skill_unrelated_share"] == 1.0
    # unrelated_skills (the teacher fit's unrelated pairs) gives every episode one, from the episodes that have a skill
    premise = unrelated_skills(episodes, skill_of)
    assert set(premise) == {"t0", "t1", "c2", "c3", "t4"} and premise["t1"] == "cook first"
    assert premise["c3"] in ("take first", "look first")


def test_one_task_type_falls_back_to_another_task_and_says_so(real_episodes):
    twc_gold, twc_failure = real_episodes["twc-gold"], real_episodes["twc-failure"]
    episodes = [
        dataclasses.replace(twc_gold, episode_id="a", group_id="task-1"),
        dataclasses.replace(twc_failure, episode_id="b", group_id="task-1"),
        dataclasses.replace(twc_gold, episode_id="c", group_id="task-2"),
    ]
    skill_of = {"a": "skill a", "b": "skill b", "c": "skill c"}
    sources = unrelated_sources(episodes, skill_of)
    assert sources["a"] == "c" and sources["b"] == "c" and sources["c"] in ("a", "b")  # another task first
    _, metrics = assigned_skills(episodes, skill_of, "unrelated")
    assert metrics == {"opd/skill_unrelated_share": 0.0, "opd/skill_reassigned_share": 1.0}
    # a lone skilled episode has no other skill to take: it gets none (not its own)
    skills, _ = assigned_skills(episodes, {"a": "skill a"}, "unrelated")
    assert skills == {}


def test_own_assignment_is_the_identity(real_episodes):
    episodes = batch(real_episodes, "tctc")
    skill_of = {"t0": "x", "c1": "y", "c3": "z"}
    skills, metrics = assigned_skills(episodes, skill_of, "own")
    assert skills == skill_of
    assert metrics == {"opd/skill_unrelated_share": 0.0, "opd/skill_reassigned_share": 0.0}
    with pytest.raises(ValueError, match="skill assignment must be one of"):
        assigned_skills(episodes, skill_of, "shuffled")

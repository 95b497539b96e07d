"""The premise check's controls (``stage1.premise_controls``) on real episodes
(TextWorldExpress twc): each control changes one thing of the own skill.

- unrelated: a derangement of the own skills within each outcome, never from the episode's
  own task, so that with one task type and one episode per task every episode still gets a
  different text (the round-robin assignment gave them all one);
- same-form: per listed step, the named action replaced by another valid action of the step;
- shuffled: not applicable, and said so, where every own skill has one item;
- every source's interval on a resampling stream of its own.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from hindsight.skills import episodes_from_table
from hindsight.skills.compact import concrete_action, parse_compact_skill, skill_lists_action
from hindsight.stage1 import premise_controls
from hindsight.stage1.premise import premise_metrics
from hindsight.stage1.premise_controls import (
    premise_sources, same_form_skills, shuffled_metrics, shuffled_skills, unrelated_control, unrelated_skill_sources,
    valid_actions_by_step,
)
from hindsight.stage1.premise_report import premise_summary


@pytest.fixture(scope="module")
def real(recorded_tables):
    """(twc gold episode, twc failure episode, the gold table)."""
    (gold,) = episodes_from_table(recorded_tables["twc_gold"])
    (failure,) = episodes_from_table(recorded_tables["twc_failure"])
    assert gold.success and not failure.success
    return gold, failure, recorded_tables["twc_gold"]


def one_type_batch(gold, failure, won: int, lost: int):
    """``won`` copies of the gold episode and ``lost`` of the failure, each its own task
    (group size 1), all of one task type: the hidden-rooms premise's layout."""
    episodes = [dataclasses.replace(gold, episode_id=f"w{i}", group_id=f"twc/train/{i}") for i in range(won)]
    episodes += [dataclasses.replace(failure, episode_id=f"l{i}", group_id=f"twc/train/{won + i}") for i in range(lost)]
    return episodes


def test_one_task_type_and_one_episode_per_task_still_give_every_episode_another_text(real):
    gold, failure, _ = real
    episodes = one_type_batch(gold, failure, won=12, lost=5)
    own = {e.episode_id: (f"do: move {e.episode_id}" if e.success else f"avoid: move {e.episode_id}") for e in episodes}
    rule = {e.episode_id: "avoid: move north; move south" for e in episodes}  # what the old control drew from
    sources, metrics = premise_sources(episodes, own, rule, {}, seed=1237)
    unrelated = sources["unrelated"]
    assert set(unrelated) == set(own)
    # a derangement: every own skill given exactly once, never to its own episode
    assert sorted(unrelated.values()) == sorted(own.values())
    assert all(unrelated[e] != own[e] for e in own)
    assert metrics["unrelated/distinct_share"] == 1.0 and metrics["unrelated/given_share"] == 1.0
    # the same outcome: the form (head) held, the content another episode's
    success = {e.episode_id: e.success for e in episodes}
    assert all(parse_compact_skill(unrelated[e])[0] == ("do:" if success[e] else "avoid:") for e in own)
    assert metrics["unrelated/other_task_type_share"] == 0.0  # one task type: another task, not another type
    assert premise_sources(episodes, own, rule, {}, seed=1237)[0]["unrelated"] == unrelated
    assert premise_sources(episodes, own, rule, {}, seed=7)[0]["unrelated"] != unrelated


@pytest.mark.parametrize("tries", [premise_controls.DERANGEMENT_TRIES, 0])
def test_no_episode_takes_a_skill_of_its_own_task(real, monkeypatch, tries):
    monkeypatch.setattr(premise_controls, "DERANGEMENT_TRIES", tries)  # 0: the grouped construction alone
    gold, _, _ = real
    groups = ["a", "a", "a", "b", "c", "d", "b", "e"]
    episodes = [dataclasses.replace(gold, episode_id=f"e{i}", group_id=g) for i, g in enumerate(groups)]
    own = {e.episode_id: f"do: take item {i}" for i, e in enumerate(episodes)}
    sources = unrelated_skill_sources(episodes, own, seed=3)
    group = {e.episode_id: e.group_id for e in episodes}
    assert set(sources) == set(own) and sorted(sources.values()) == sorted(own)
    assert all(group[target] != group[source] for target, source in sources.items())


def test_an_outcome_without_another_task_gives_no_unrelated_skill(real):
    gold, failure, _ = real
    same_task = [dataclasses.replace(gold, episode_id=f"w{i}", group_id="one task") for i in range(3)]
    lone_loss = [dataclasses.replace(failure, episode_id="l0", group_id="other task")]
    own = {e.episode_id: f"do: take {e.episode_id}" for e in same_task} | {"l0": "avoid: eat moon"}
    skills, metrics = unrelated_control(same_task + lone_loss, own, seed=0)
    assert skills == {}  # three won episodes of one task, one lost episode: nothing to give
    assert metrics["assigned"] == 0 and metrics["given_share"] == 0.0
    # a group holding more than half of an outcome: only the others can be served from outside it
    mixed = same_task + [dataclasses.replace(gold, episode_id="w9", group_id="other task")]
    own["w9"] = "do: take w9"
    sources = unrelated_skill_sources(mixed, own, seed=0)
    assert all((target == "w9") != (source == "w9") for target, source in sources.items())


def test_the_same_form_control_names_another_valid_action_of_the_step(real):
    gold, _, table = real
    valid = valid_actions_by_step(table)
    steps = list(gold.steps)
    skill = f"do: {steps[0].action}; {steps[-1].action}"
    control = same_form_skills([gold], {gold.episode_id: skill}, valid, seed=0)
    listed = {s.step for s in steps if skill_lists_action(skill, s.action)}
    assert set(control.by_step) == {(gold.episode_id, step) for step in listed} and listed
    assert control.of_episode == {gold.episode_id: skill}
    head, items = parse_compact_skill(skill)
    for (_, step), text in control.by_step.items():
        new_head, new_items = parse_compact_skill(text)
        played = concrete_action(steps[step].action)
        assert new_head == head and len(new_items) == len(items)
        changed = [i for i, (old, new) in enumerate(zip(items, new_items)) if old != new]
        assert changed == [i for i, item in enumerate(items) if concrete_action(item) == played]
        replacement = new_items[changed[0]]
        assert replacement in {concrete_action(a) for a in valid[(gold.episode_id, step)]}
        assert replacement not in {concrete_action(item) for item in items}
        assert not skill_lists_action(text, steps[step].action)


def test_a_shuffled_control_of_one_item_skills_is_reported_not_applicable():
    own = {"a": "do: move west", "b": "do: take coin", "c": "avoid: move north"}
    shuffled = shuffled_skills(own, seed=0)
    assert shuffled == {}
    metrics = {f"p/shuffled/{key}": value for key, value in shuffled_metrics(own, shuffled).items()}
    assert metrics["p/shuffled/applicable_share"] == 0.0
    summary = premise_summary(metrics, "p")
    (row,) = summary[summary["skill_source"] == "shuffled"].itertuples()
    assert row.note.startswith("not applicable") and pd.isna(row.gap_mean)
    two = shuffled_metrics({**own, "d": "do: take coin; move east"}, shuffled_skills({**own, "d": "do: take coin; move east"}))
    assert two == {"applicable": 1.0, "applicable_share": 0.25}


def _row(source, episode_id, gap, tokens):
    return {"episode_id": episode_id, "task_type": "twc", "success": True, "skill_source": source, "skill": "do: x",
            "tokens": tokens, "gap_mean": gap, "positive_share": float(gap > 0), "listed_tokens": tokens,
            "listed_gap_mean": gap, "unlisted_gap_mean": float("nan")}


def test_each_source_resamples_on_a_stream_of_its_own():
    gaps = [0.3 * ((i * 7) % 11 - 5) for i in range(25)]
    table = pd.DataFrame([_row(source, f"e{i}", gap, 1 + i % 4) for source in ("own", "unrelated") for i, gap in enumerate(gaps)])
    metrics = premise_metrics(table, "p", seed=0)
    assert metrics["p/own/won/gap_mean"] == pytest.approx(metrics["p/unrelated/won/gap_mean"])
    # the same episodes and gaps: one shared stream would give the same interval to the last digit
    assert (metrics["p/own/won/gap_low"], metrics["p/own/won/gap_high"]) != (
        metrics["p/unrelated/won/gap_low"], metrics["p/unrelated/won/gap_high"])
    assert premise_metrics(table, "p", seed=0) == metrics


def test_the_summary_says_what_the_unrelated_control_held():
    table = pd.DataFrame([_row("unrelated", "a", 0.1, 3), _row("unrelated", "b", -0.1, 3)])
    metrics = premise_metrics(table, "p") | {
        "p/unrelated/assigned": 2.0, "p/unrelated/distinct_share": 1.0, "p/unrelated/other_task_type_share": 0.0,
    }
    summary = premise_summary(metrics, "p")
    assert set(summary["skill_source"]) == {"unrelated"}
    assert all("distinct texts 1.00" in note for note in summary["note"])

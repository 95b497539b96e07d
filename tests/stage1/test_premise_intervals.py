"""The premise's intervals, its information counts and the shuffled-skill control.

Known gaps and log-probs on a real episode (TextWorldExpress twc gold path): how many steps
a skill could tell (the plain policy unsure of the played action, the skill naming it),
the 95% interval over episodes beside every gap, and the summary table of the stage's
reporting dataset.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hindsight.skills import episodes_from_table
from hindsight.skills.compact import parse_compact_skill
from hindsight.stage1.premise import UNSURE_PROBABILITY, episode_premise_row, premise_metrics
from hindsight.stage1.premise_controls import shuffled_skills
from hindsight.stage1.premise_report import SUMMARY_COLUMNS, premise_summary


@pytest.fixture(scope="module")
def twc_gold(recorded_tables):
    (episode,) = episodes_from_table(recorded_tables["twc_gold"])
    assert episode.success and len(episode.steps) >= 3
    return episode


def test_a_step_is_informative_when_the_plain_policy_was_unsure_and_the_skill_names_it(twc_gold):
    first, second, third = twc_gold.steps[:3]
    gaps = {first.step: [0.2, 0.1], second.step: [0.3], third.step: []}  # the third: every token forced
    half = math.log(UNSURE_PROBABILITY)
    # the first action's probability is the product of its tokens': 0.6 * 0.6 = 0.36 < 0.5, though
    # each token alone is above 0.5; the second is sure (0.9); the third forced (probability 1)
    plain = {first.step: [math.log(0.6), math.log(0.6)], second.step: [math.log(0.9)], third.step: []}
    row = episode_premise_row(twc_gold, "rule", f"do: {first.action}; {second.action}", gaps, plain)
    assert (row["steps"], row["unsure_steps"], row["listed_steps"], row["informative_steps"]) == (3, 1, 2, 1)
    assert row["unsure_tokens"] == 0  # no single token below 0.5: the step count is the action's
    other = episode_premise_row(twc_gold, "rule", f"do: {second.action}", gaps, plain)
    assert other["informative_steps"] == 0  # unsure of the first action, but the skill names another
    assert plain[first.step][0] > half


def _row(episode_id, success, gap, tokens, steps=4, informative=1):
    return {"episode_id": episode_id, "task_type": "coin", "success": success, "skill_source": "own", "skill": "do: x",
            "tokens": tokens, "gap_mean": gap, "positive_share": float(gap > 0), "listed_tokens": tokens,
            "listed_gap_mean": gap, "unlisted_gap_mean": float("nan"), "unsure_tokens": 0, "unsure_gap_mean": float("nan"),
            "steps": steps, "unsure_steps": 2, "listed_steps": 3, "informative_steps": informative}


def test_every_gap_has_an_interval_over_episodes_and_the_shares_are_step_weighted():
    table = pd.DataFrame([_row(f"w{i}", True, 0.1 + 0.01 * i, 5) for i in range(30)]
                         + [_row("l", False, -1.0, 3, steps=6, informative=0)])
    metrics = premise_metrics(table, "p", seed=0)
    assert metrics["p/own/won/episodes"] == 30
    assert 0.1 < metrics["p/own/won/gap_low"] < metrics["p/own/won/gap_mean"] < metrics["p/own/won/gap_high"] < 0.4
    assert metrics["p/own/won/listed/gap_low"] == pytest.approx(metrics["p/own/won/gap_low"])
    assert metrics["p/own/all/gap_low"] < metrics["p/own/won/gap_low"]  # the lost episode widens it downwards
    assert metrics["p/own/lost/gap_low"] == metrics["p/own/lost/gap_high"] == -1.0
    assert metrics["p/own/all/informative_share"] == pytest.approx(30 / (30 * 4 + 6))
    assert metrics["p/own/won/unsure_step_share"] == pytest.approx(0.5)
    assert metrics["p/own/won/listed_step_share"] == pytest.approx(0.75)
    # a table written before the step counts has no share, and no error
    assert "p/own/won/informative_share" not in premise_metrics(table.drop(columns=["steps"]), "p")


def test_the_summary_has_a_row_per_source_outcome_and_token_set():
    metrics = premise_metrics(pd.DataFrame([_row("a", True, 0.5, 2), _row("b", True, -0.5, 2)]), "stage1/premise")
    summary = premise_summary(metrics, "stage1/premise")
    assert tuple(summary.columns) == SUMMARY_COLUMNS
    won = summary[(summary["outcome"] == "won") & (summary["tokens_on"] == "all")].iloc[0]
    assert won["gap_mean"] == pytest.approx(0.0) and won["episodes"] == 2 and won["gap_low"] < 0 < won["gap_high"]
    assert won["informative_share"] == pytest.approx(0.25)
    assert set(summary["tokens_on"]) == {"all", "listed"}  # unlisted and unsure have no token here
    assert premise_summary({}, "stage1/premise").empty


def test_a_shuffled_skill_keeps_the_items_in_another_order():
    skills = {"a": "do: move north; open door to east; take coin", "b": "do: take coin", "c": "avoid: move west; move east",
              "d": "do: take coin; take coin", "e": '{"episode_skill": "x"}'}
    shuffled = shuffled_skills(skills, seed=0)
    assert set(shuffled) == {"a", "c"}  # one item, one distinct item, or not compact: no other order
    for key, skill in shuffled.items():
        head, items = parse_compact_skill(skill)
        original_head, original = parse_compact_skill(skills[key])
        assert head == original_head and sorted(items) == sorted(original) and items != original
    assert shuffled_skills(skills, seed=0) == shuffled

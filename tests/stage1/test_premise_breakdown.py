"""The premise check's split by step: the gap on the actions a skill lists and on the others,
and on the tokens the plain policy was unsure of.

``episode_premise_row`` and ``premise_metrics`` are pure: these tests feed them known gaps
on a real episode (TextWorldExpress twc gold path) and check the split and the weighting.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hindsight.skills import episodes_from_table
from hindsight.skills.compact import skill_lists_action
from hindsight.stage1.premise import PREMISE_COLUMNS, UNSURE_PROBABILITY, episode_premise_row, premise_metrics


@pytest.fixture(scope="module")
def twc_gold(recorded_tables):
    (episode,) = episodes_from_table(recorded_tables["twc_gold"])
    assert episode.success and len(episode.steps) >= 3
    return episode


def test_a_skill_lists_an_action_by_its_concrete_template():
    assert skill_lists_action("do: take black pepper; put black pepper in shelf", "Take  Black pepper")
    assert not skill_lists_action("do: take black pepper", "take black")
    assert skill_lists_action("avoid: open fridge ;", "open fridge")  # the written form reads the same
    assert not skill_lists_action('{"episode_skill": "take black pepper"}', "take black pepper")  # JSON lists nothing


def test_an_episode_row_splits_its_tokens_by_listed_steps(twc_gold):
    first, second, third = twc_gold.steps[:3]
    skill = f"do: {first.action}; {third.action}"
    gaps = {first.step: [0.5, 0.1], second.step: [-1.0], third.step: [0.3]}
    row = episode_premise_row(twc_gold, "own", skill, gaps)
    assert set(row) == set(PREMISE_COLUMNS)
    assert row["tokens"] == 4 and row["listed_tokens"] == 3
    assert row["gap_mean"] == pytest.approx(-0.1 / 4)
    assert row["listed_gap_mean"] == pytest.approx(0.9 / 3)
    assert row["unlisted_gap_mean"] == pytest.approx(-1.0)
    assert row["positive_share"] == pytest.approx(0.75)
    # nothing listed: the listed mean is NaN, not 0
    none_listed = episode_premise_row(twc_gold, "rule", "do: examine moon", gaps)
    assert none_listed["listed_tokens"] == 0 and math.isnan(none_listed["listed_gap_mean"])
    assert episode_premise_row(twc_gold, "own", skill, {}) is None


def test_metrics_weight_each_side_by_its_tokens():
    rows = [
        {"episode_id": "a", "task_type": "twc", "success": True, "skill_source": "own", "skill": "do: x", "tokens": 4,
         "gap_mean": 0.0, "positive_share": 0.5, "listed_tokens": 2, "listed_gap_mean": 1.0, "unlisted_gap_mean": -1.0},
        {"episode_id": "b", "task_type": "twc", "success": True, "skill_source": "own", "skill": "do: y", "tokens": 2,
         "gap_mean": -2.0, "positive_share": 0.0, "listed_tokens": 0, "listed_gap_mean": float("nan"),
         "unlisted_gap_mean": -2.0},
        {"episode_id": "c", "task_type": "twc", "success": False, "skill_source": "own", "skill": "avoid: z",
         "tokens": 1, "gap_mean": -3.0, "positive_share": 0.0, "listed_tokens": 1, "listed_gap_mean": -3.0,
         "unlisted_gap_mean": float("nan")},
    ]
    metrics = premise_metrics(pd.DataFrame(rows), "p")
    assert metrics["p/own/won/gap_mean"] == pytest.approx(-4.0 / 6)
    assert metrics["p/own/won/listed/gap_mean"] == pytest.approx(1.0)
    assert metrics["p/own/won/listed/tokens"] == 2
    assert metrics["p/own/won/unlisted/gap_mean"] == pytest.approx(-6.0 / 4)
    assert metrics["p/own/won/unlisted/tokens"] == 4
    assert metrics["p/own/lost/listed/gap_mean"] == pytest.approx(-3.0)
    assert "p/own/lost/unlisted/gap_mean" not in metrics and metrics["p/own/lost/unlisted/tokens"] == 0
    assert metrics["p/own/all/listed/gap_mean"] == pytest.approx(-1.0 / 3)


def test_an_episode_row_keeps_the_gap_where_the_plain_policy_was_unsure(twc_gold):
    first, second = twc_gold.steps[:2]
    gaps = {first.step: [0.5, 0.1], second.step: [-1.0]}
    unsure, sure = math.log(UNSURE_PROBABILITY) - 0.1, math.log(UNSURE_PROBABILITY) + 0.1
    row = episode_premise_row(twc_gold, "own", f"do: {first.action}", gaps, {first.step: [unsure, sure], second.step: [unsure]})
    assert row["unsure_tokens"] == 2 and row["unsure_gap_mean"] == pytest.approx((0.5 - 1.0) / 2)
    without = episode_premise_row(twc_gold, "own", f"do: {first.action}", gaps)  # no plain log-probs: none unsure
    assert without["unsure_tokens"] == 0 and math.isnan(without["unsure_gap_mean"])
    metrics = premise_metrics(pd.DataFrame([row, {**row, "episode_id": "b", "unsure_tokens": 0, "unsure_gap_mean": float("nan")}]), "p")
    assert metrics["p/own/won/unsure/gap_mean"] == pytest.approx(-0.25) and metrics["p/own/won/unsure/tokens"] == 2
    old_table = pd.DataFrame([row]).drop(columns=["unsure_tokens", "unsure_gap_mean"])  # a version written before the split
    assert "p/own/won/unsure/tokens" not in premise_metrics(old_table, "p")

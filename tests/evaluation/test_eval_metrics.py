"""Success rates and their intervals: ``wilson_interval`` against known values and
``success_summary`` on a hand-made step table."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hindsight.evaluation.metrics import SUMMARY_COLUMNS, success_summary, wilson_interval
from hindsight.evaluation.report import markdown_table


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        (5, 10, 0.236590, 0.763410),
        (0, 10, 0.0, 0.277540),
        (10, 10, 0.722460, 1.0),
        (1, 4, 0.045586, 0.699364),
    ],
)
def test_wilson_interval_known_values(successes, trials, low, high):
    assert wilson_interval(successes, trials) == pytest.approx((low, high), abs=1e-6)


def test_wilson_interval_solves_the_score_equation():
    """The bounds are the roots p of (p_hat - p)^2 = z^2 p (1 - p) / n."""
    successes, trials, z = 81, 263, 1.96
    p_hat = successes / trials
    a = 1 + z * z / trials
    b = -(2 * p_hat + z * z / trials)
    c = p_hat * p_hat
    root = math.sqrt(b * b - 4 * a * c)
    roots = ((-b - root) / (2 * a), (-b + root) / (2 * a))
    assert wilson_interval(successes, trials, z) == pytest.approx(roots, abs=1e-12)


def test_wilson_interval_of_no_trials_is_uninformative():
    assert wilson_interval(0, 0) == (0.0, 1.0)


def steps_of(agent: str, split: str, episode_id: str, task_type: str, valid: list[bool], won: bool) -> list[dict]:
    """Step rows of one episode (won on its last step when ``won``)."""
    return [
        {
            "agent": agent, "eval_split": split, "episode_id": episode_id, "task_type": task_type, "step": step,
            "action_valid": is_valid, "won": won and step == len(valid) - 1,
            "reward": 10.0 * (won and step == len(valid) - 1) - 0.1 * (not is_valid),
        }
        for step, is_valid in enumerate(valid)
    ]


@pytest.fixture()
def two_agents_same_ids() -> pd.DataFrame:
    """Two agents that played the same episode ids (e1-e4) with different outcomes."""
    rows = []
    rows += steps_of("policy", "seen", "e1", "twc", [True, True, True], won=True)
    rows += steps_of("policy", "seen", "e2", "twc", [True, False], won=False)
    rows += steps_of("policy", "seen", "e3", "twc", [True], won=True)
    rows += steps_of("policy", "seen", "e4", "cookingworld", [True, True, True, True], won=False)
    rows += steps_of("random", "seen", "e1", "twc", [True, True, True, True, True], won=False)
    rows += steps_of("random", "seen", "e2", "twc", [True], won=False)
    rows += steps_of("random", "seen", "e3", "twc", [True, True], won=False)
    rows += steps_of("random", "seen", "e4", "cookingworld", [True, True], won=True)
    return pd.DataFrame(rows)


def summary_row(summary: pd.DataFrame, agent: str, task_type: str) -> dict:
    row = summary[(summary["agent"] == agent) & (summary["task_type"] == task_type)]
    assert len(row) == 1, (agent, task_type)
    return row.iloc[0].to_dict()


def test_success_summary_counts_rates_and_all_rows(two_agents_same_ids):
    summary = success_summary(two_agents_same_ids)
    assert list(summary.columns) == SUMMARY_COLUMNS
    assert len(summary) == 6  # 2 agents x (twc, cookingworld, all)
    twc = summary_row(summary, "policy", "twc")
    assert (twc["episodes"], twc["successes"]) == (3, 2)
    assert twc["success_rate"] == pytest.approx(2 / 3)
    assert (twc["ci_low"], twc["ci_high"]) == pytest.approx(wilson_interval(2, 3))
    assert twc["mean_steps"] == pytest.approx(2.0)
    assert twc["invalid_action_rate"] == pytest.approx(1 / 6)
    everything = summary_row(summary, "policy", "all")
    assert (everything["episodes"], everything["successes"], everything["success_rate"]) == (4, 2, 0.5)
    assert everything["mean_steps"] == pytest.approx(2.5)
    assert everything["invalid_action_rate"] == pytest.approx(1 / 10)


def test_agents_sharing_episode_ids_are_not_merged(two_agents_same_ids):
    summary = success_summary(two_agents_same_ids)
    random_twc = summary_row(summary, "random", "twc")
    assert (random_twc["episodes"], random_twc["successes"]) == (3, 0)
    assert random_twc["mean_steps"] == pytest.approx((5 + 1 + 2) / 3)
    random_cooking = summary_row(summary, "random", "cookingworld")
    assert (random_cooking["episodes"], random_cooking["successes"]) == (1, 1)
    assert summary["episodes"][summary["task_type"] == "all"].tolist() == [4, 4]


def test_markdown_table_shows_rates_as_percentages(two_agents_same_ids):
    text = markdown_table(success_summary(two_agents_same_ids), title="Held-out")
    assert text.startswith("## Held-out")
    assert "| policy | seen | twc | 3 | 66.7 (" in text
    assert "| random | seen | cookingworld | 1 | 100.0 (" in text

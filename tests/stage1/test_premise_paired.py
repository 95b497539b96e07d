"""The premise check's paired comparisons (``stage1.premise_paired``): the own skill minus
each control, episode by episode on the tokens both scored, with its interval, and their
rows in the summary table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hindsight.stage1.premise import premise_metrics
from hindsight.stage1.premise_paired import paired_differences, paired_metrics
from hindsight.stage1.premise_report import premise_summary


def _row(episode: int, source: str, gap: float, *, listed_gap: float | None = None, tokens: int = 4,
         listed_tokens: int = 2, success: bool = True) -> dict:
    return {
        "episode_id": f"e{episode}", "task_type": "coin", "success": success, "skill_source": source, "skill": "do: x",
        "tokens": tokens, "gap_mean": gap, "positive_share": 0.5, "listed_tokens": listed_tokens,
        "listed_gap_mean": gap if listed_gap is None else listed_gap, "unlisted_gap_mean": np.nan,
        "unsure_tokens": 0, "unsure_gap_mean": np.nan, "steps": 2, "unsure_steps": 0, "listed_steps": 1, "informative_steps": 0,
    }


def _shifted_table(episodes: int = 12, shift: float = 0.05) -> pd.DataFrame:
    """Episodes whose gaps spread widely (-1 .. +1) while own beats the same-form control by
    ``shift`` on every one: separate intervals overlap, the paired one does not reach 0."""
    rows = []
    for episode, base in enumerate(np.linspace(-1.0, 1.0, episodes)):
        rows.append(_row(episode, "own", 0.0, listed_gap=base + shift, tokens=6, listed_tokens=3))
        rows.append(_row(episode, "same_form", base, tokens=3, listed_tokens=3))
    return pd.DataFrame(rows)


def test_the_pair_compares_the_same_tokens_of_the_same_episodes():
    table = pd.DataFrame([
        _row(0, "own", 0.1, listed_gap=0.4, tokens=6, listed_tokens=2),
        _row(0, "same_form", -0.2, tokens=2, listed_tokens=2),
        _row(0, "rule", 0.3, tokens=6),
        _row(1, "own", 0.2, listed_gap=0.0, tokens=6, listed_tokens=4),
        _row(2, "same_form", 0.5, tokens=1),  # no own row: not a pair
    ])
    same_form = paired_differences(table, "same_form")
    assert same_form.index.tolist() == ["e0"]  # e1 has no same-form row, e2 no own row
    # the steps own names: own's listed gap against the control's, weighted by own's listed tokens
    assert same_form.loc["e0", "difference"] == pytest.approx(0.4 - (-0.2)) and same_form.loc["e0", "weight"] == 2
    rule = paired_differences(table, "rule")
    assert rule.loc["e0", "difference"] == pytest.approx(0.1 - 0.3) and rule.loc["e0", "weight"] == 6  # every token


def test_pairing_finds_a_difference_that_separate_intervals_hide():
    table = _shifted_table()
    separate = premise_metrics(table, seed=0)
    own_low, own_high = separate["premise/own/won/listed/gap_low"], separate["premise/own/won/listed/gap_high"]
    control_low, control_high = separate["premise/same_form/won/gap_low"], separate["premise/same_form/won/gap_high"]
    assert own_low < control_high and control_low < own_high  # the separate intervals overlap
    paired = paired_metrics(table, seed=0)
    assert paired["premise/own_minus_same_form/won/gap_mean"] == pytest.approx(0.05)
    assert 0 < paired["premise/own_minus_same_form/won/gap_low"] <= 0.05 <= paired["premise/own_minus_same_form/won/gap_high"]
    assert paired["premise/own_minus_same_form/won/positive_share"] == 1.0
    assert paired["premise/own_minus_same_form/won/episodes"] == 12 and paired["premise/own_minus_same_form/won/tokens"] == 36
    assert "premise/own_minus_same_form/lost/gap_mean" not in paired  # no lost episode


def test_no_difference_gives_an_interval_around_zero():
    table = _shifted_table(shift=0.0)
    paired = paired_metrics(table, seed=0)
    assert paired["premise/own_minus_same_form/all/gap_mean"] == pytest.approx(0.0, abs=1e-12)
    low, high = paired["premise/own_minus_same_form/all/gap_low"], paired["premise/own_minus_same_form/all/gap_high"]
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.0, abs=1e-12)  # no episode differs
    assert paired["premise/own_minus_same_form/all/positive_share"] == 0.0
    separate = premise_metrics(table, seed=0)  # while each source alone spreads widely
    assert separate["premise/same_form/all/gap_high"] - separate["premise/same_form/all/gap_low"] > 0.5


def test_the_summary_has_a_row_per_pair_on_its_token_set():
    table = _shifted_table()
    table = pd.concat([table, table[table["skill_source"] == "own"].assign(skill_source="unrelated", gap_mean=-0.1)])
    metrics = {**premise_metrics(table, seed=0), **paired_metrics(table, seed=0)}
    summary = premise_summary(metrics).set_index(["skill_source", "outcome"])
    same_form = summary.loc[("own_minus_same_form", "won")]
    assert same_form["tokens_on"] == "listed" and same_form["gap_mean"] == pytest.approx(0.05)
    assert same_form["gap_low"] > 0 and "own minus same_form" in same_form["note"]
    unrelated = summary.loc[("own_minus_unrelated", "won")]
    assert unrelated["tokens_on"] == "all" and unrelated["gap_mean"] == pytest.approx(0.1)


def test_a_table_without_own_rows_has_no_pairs():
    table = _shifted_table()
    assert paired_metrics(table[table["skill_source"] != "own"]) == {}
    assert paired_metrics(pd.DataFrame(columns=table.columns)) == {}

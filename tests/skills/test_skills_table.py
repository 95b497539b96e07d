"""The one Skills-table builder (``skills_table``) against a hand-made known answer."""

import math

import pandas as pd
import pytest

from hindsight.data.schema import SKILLS_TABLE_COLUMNS
from hindsight.skills.records import SkillRecord, skills_table

pytestmark = pytest.mark.unit

RECORDS = [
    SkillRecord("e1", "g1", True, "Took the apple.", "take before put", "rule_miner", True, "{...}"),
    SkillRecord("e2", "g1", False, "", "", "rule_miner", False, "no json"),
]


def test_skills_table_without_validation_accepts_every_parsed_skill():
    table = skills_table(RECORDS)
    assert list(table.columns) == list(SKILLS_TABLE_COLUMNS)
    assert table.drop(columns="delta_success").to_dict("records") == [
        {"episode_id": "e1", "group_id": "g1", "success": True, "summary": "Took the apple.",
         "skill": "take before put", "teacher": "rule_miner", "accepted": True, "parse_ok": True},
        {"episode_id": "e2", "group_id": "g1", "success": False, "summary": "", "skill": "",
         "teacher": "rule_miner", "accepted": False, "parse_ok": False},
    ]
    assert table["delta_success"].isna().all()
    assert {name: str(table[name].dtype) for name in ("success", "accepted", "delta_success", "parse_ok")} == {
        "success": "bool", "accepted": "bool", "delta_success": "float64", "parse_ok": "bool"}


def test_skills_table_takes_the_verdicts_given():
    table = skills_table(RECORDS, accepted=[False, False], delta_success=[0.0, math.nan])
    assert table["accepted"].tolist() == [False, False]
    assert table["delta_success"].iloc[0] == 0.0 and math.isnan(table["delta_success"].iloc[1])
    with pytest.raises(ValueError):
        skills_table(RECORDS, accepted=[True])


def test_empty_skills_table_has_the_columns_and_dtypes():
    table = skills_table([])
    assert list(table.columns) == list(SKILLS_TABLE_COLUMNS) and table.empty
    assert table["accepted"].dtype == bool and table["delta_success"].dtype == "float64"
    assert isinstance(table, pd.DataFrame)

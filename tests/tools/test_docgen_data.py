"""docs/data.md is what the code says: the tables' columns and the catalog's datasets with
the pipelines that write and read them (``tools.docgen.data``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight.data.schema import TRAJECTORY_COLUMNS
from hindsight.pipeline_registry import register_pipelines
from tools.docgen.data import render

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_data_reference_is_current():
    expected = render(ROOT, register_pipelines())
    committed = (ROOT / "docs" / "data.md").read_text()
    assert committed == expected, "docs/data.md is stale: python -m tools.docgen.data docs/data.md"


def test_every_trajectory_column_and_the_producers_are_listed():
    page = render(ROOT, register_pipelines())
    assert all(f"| `{column}` |" in page for column in TRAJECTORY_COLUMNS)
    row = next(line for line in page.splitlines() if line.startswith("| `base_policy` |"))
    assert "`behaviour_cloning`" in row.split("|")[5] and "`empo`" in row.split("|")[6]

"""The test tiers block of docs/benchmarks.md, read without collecting: its files marked slow
or pipeline are the test files whose ``pytestmark`` names those tiers, with the same tiers
(``tools.docgen.test_tiers``; the counts are checked against pytest's collection in
tests/docs/test_test_tier_counts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.docgen.test_tiers import BEGIN, END, Collected, file_tiers, listed_files_in_sources, render

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def block() -> str:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    return page[page.index(BEGIN):page.index(END)]


def test_the_listed_files_are_those_whose_pytestmark_names_slow_or_pipeline():
    rows = [[cell.strip() for cell in line.split("|")] for line in block().splitlines() if line.startswith("| `tests/")]
    listed = {row[1].strip("`"): frozenset(row[3].split(", ")) for row in rows}
    expected = {file: tiers & {"slow", "pipeline"} for file, tiers in listed_files_in_sources(ROOT / "tests").items()}
    assert listed == expected, (
        "docs/benchmarks.md's files marked slow or pipeline differ from the tests' sources; regenerate the block with "
        "`python -m tools.docgen.test_tiers docs/benchmarks.md`"
    )


def test_a_files_tiers_are_read_from_its_module_level_pytestmark():
    assert file_tiers("import pytest\npytestmark = pytest.mark.slow\n") == {"slow"}
    assert file_tiers("import pytest\npytestmark = [pytest.mark.slow, pytest.mark.pipeline, pytest.mark.skipif(True, reason='x')]\n") == {
        "slow", "pipeline"}
    assert file_tiers("import pytest\npytestmark = pytest.mark.filterwarnings('ignore')\n") == set()
    assert file_tiers("import pytest\n@pytest.mark.slow\ndef test_a():\n    pass\n") == set()  # not the file's mark


def test_the_block_counts_each_tier_and_lists_the_slow_and_pipeline_files():
    collected = [
        Collected("tests/test_a.py", frozenset({"slow", "pipeline"})),
        Collected("tests/test_a.py", frozenset({"slow", "pipeline"})),
        Collected("tests/test_b.py", frozenset({"unit"})),
        Collected("tests/test_c.py", frozenset({"pipeline"})),
        Collected("tests/test_d.py", frozenset()),
    ]
    text = render(collected)
    assert text.startswith(BEGIN) and text.endswith(END)
    assert "| `-m 'not slow'` (the `addopts` of `pyproject.toml`) | 3 |" in text
    assert "| `-m unit` | 1 |" in text
    assert "| `-m 'not slow and not pipeline'` | 2 |" in text
    assert "| `-m pipeline` | 3 |" in text
    assert "| `-m slow` | 2 |" in text and '| `-m ""` | 5 |' in text
    assert "| `tests/test_a.py` | 2 | slow, pipeline |" in text
    assert "| `tests/test_c.py` | 1 | pipeline |" in text
    assert "test_b.py" not in text and "test_d.py" not in text

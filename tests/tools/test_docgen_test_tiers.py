"""The test tiers block of docs/benchmarks.md, read without collecting: its files with slow
tests are the test files whose source marks something slow, and each says how
(``tools.docgen.test_tiers``; the counts are checked against pytest's collection in
tests/docs/test_test_tier_counts.py)."""

from __future__ import annotations

from pathlib import Path

from tools.docgen.test_tiers import BEGIN, END, Collected, marked_by, render, slow_files_in_sources

ROOT = Path(__file__).resolve().parents[2]


def block() -> str:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    return page[page.index(BEGIN):page.index(END)]


def test_the_listed_slow_files_are_those_whose_source_marks_slow_tests():
    rows = [line.split("|") for line in block().splitlines() if line.startswith("| `tests/")]
    listed = [row[1].strip().strip("`") for row in rows]
    assert listed == slow_files_in_sources(ROOT / "tests"), (
        "docs/benchmarks.md's slow files differ from the tests' sources; regenerate the block with "
        "`python -m tools.docgen.test_tiers docs/benchmarks.md`"
    )
    for row in rows:
        how = "file" if "pytestmark" in row[3] else "test"
        assert how == marked_by((ROOT / row[1].strip().strip("`")).read_text()), row[1]


def test_how_a_file_marks_its_slow_tests_is_read_from_its_source():
    assert marked_by("import pytest\npytestmark = pytest.mark.slow\n") == "file"
    assert marked_by("import pytest\npytestmark = [pytest.mark.slow, pytest.mark.skipif(True, reason='x')]\n") == "file"
    assert marked_by("import pytest\n@pytest.mark.slow\ndef test_a():\n    pass\n") == "test"


def test_the_block_counts_each_tier(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("import pytest\n@pytest.mark.slow\ndef test_x():\n    pass\n")
    collected = [
        Collected("tests/test_a.py", frozenset({"slow"})),
        Collected("tests/test_a.py", frozenset()),
        Collected("tests/test_b.py", frozenset({"unit"})),
    ]
    text = render(collected, tmp_path)
    assert text.startswith(BEGIN) and text.endswith(END)
    assert "| `-m 'not slow'` (the `addopts` of `pyproject.toml`) | 2 |" in text
    assert "| `-m unit` (`UNIT_TIER` in `tests/conftest.py`) | 1 |" in text
    assert "| `-m slow` | 1 |" in text and '| `-m ""` | 3 |' in text
    assert "| `tests/test_a.py` | 1 of 2 | test by test (`@pytest.mark.slow`) |" in text

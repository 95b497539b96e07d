"""docs/benchmarks.md's test tiers are what pytest collects: each tier's size and every file
marked slow or pipeline (``tools.docgen.test_tiers``). It collects the whole suite in a
subprocess (``--collect-only``, nothing runs; about 10 s of CPU), so it lives here, out of the
unit tier; tests/tools/test_docgen_test_tiers.py checks the listed files from the sources alone."""

from __future__ import annotations

from pathlib import Path

from tools.docgen.blocks import embedded
from tools.docgen.test_tiers import BEGIN, END, collect, render

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_test_tiers_are_what_pytest_collects():
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert page == embedded(page, render(collect()), BEGIN, END), (
        "docs/benchmarks.md's test tiers differ from pytest's collection (a test added or removed, or a marker "
        "changed); regenerate them with `python -m tools.docgen.test_tiers docs/benchmarks.md`"
    )

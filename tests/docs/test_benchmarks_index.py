"""``benchmarks/README.md`` is what ``tools.docgen.benchmarks`` makes of the scripts as they
are: every script of ``benchmarks/`` is in it with its declared fields, each cited doc page
and heading exists, and each script is smoke-run by a test under ``tests/benchmarks/``.
Read from the sources (nothing imported or run), so it takes well under a second."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.docgen.benchmarks import problems, read_modules, read_smoke, render

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_every_script_declares_its_fields_cites_real_sections_and_has_a_smoke_test():
    wrong = problems(read_modules(ROOT / "benchmarks"), read_smoke(ROOT / "tests" / "benchmarks"))
    assert not wrong, "benchmarks/ is inconsistent (tools/docgen/benchmarks.py says what each field holds):\n  " + "\n  ".join(wrong)


def test_the_committed_index_is_what_the_scripts_declare():
    page = (ROOT / "benchmarks" / "README.md").read_text()
    assert page == render(read_modules(ROOT / "benchmarks"), read_smoke(ROOT / "tests" / "benchmarks")), (
        "benchmarks/README.md differs from the scripts (a script added, removed or its docstring or fields changed, "
        "or a smoke test moved); regenerate it with `python -m tools.docgen.benchmarks benchmarks/README.md`"
    )


def test_the_pages_cite_only_scripts_that_exist():
    """The README and the pages (the journal aside: it tells what was run then) name only
    scripts that ``benchmarks/`` holds."""
    scripts = {path.name for path in (ROOT / "benchmarks").glob("*.py")}
    pages = [ROOT / "README.md", *(page for page in sorted((ROOT / "docs").rglob("*.md")) if "journal" not in page.parts)]
    missing = sorted(
        f"{page.relative_to(ROOT)}: benchmarks/{name}"
        for page in pages
        for name in set(re.findall(r"(?<![\w/])benchmarks/(\w+\.py)", page.read_text()))
        if name not in scripts
    )
    assert not missing, f"pages cite scripts that benchmarks/ does not hold: {missing}"

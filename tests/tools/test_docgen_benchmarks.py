"""``tools.docgen.benchmarks`` reads a script's fields and its smoke test from the sources
and names what is missing (on a toy ``benchmarks/`` folder; the real one is checked by
tests/docs/test_benchmarks_index.py)."""

from __future__ import annotations

import pytest

from tools.docgen.benchmarks import GROUPS, problems, read_modules, read_smoke, render, summary_of

pytestmark = pytest.mark.unit

SCRIPT = '''"""How fast is it? (prints a table)

More prose.
"""

GROUP = "hardware"
REPRODUCES = ("docs/page.md#the-figures",)
MEASURED = "3 s on one core"
LAST_RUN = "2026-01-01 (the figure's date)"


def main():
    pass


if __name__ == "__main__":
    main()
'''
HELPER = '''"""Shared ``helpers``."""

USED_BY = ("fast.py",)
'''


def _project(tmp_path, script: str = SCRIPT, smoke: str = 'SMOKE = {"fast.py": (("--tiny",), "table")}\n'):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "fast.py").write_text(script)
    (tmp_path / "benchmarks" / "shared.py").write_text(HELPER)
    (tmp_path / "tests" / "benchmarks").mkdir(parents=True)
    (tmp_path / "tests" / "benchmarks" / "test_smoke.py").write_text("import pytest\npytestmark = pytest.mark.slow\n" + smoke)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## The figures\n\n```\n## not a heading\n```\n")
    return read_modules(tmp_path / "benchmarks"), read_smoke(tmp_path / "tests" / "benchmarks")


def test_a_consistent_folder_has_no_problem_and_renders_its_rows(tmp_path):
    modules, smoke = _project(tmp_path)
    assert problems(modules, smoke, tmp_path) == []
    page = render(modules, smoke)
    assert f"## {GROUPS['hardware']}" in page
    assert "| [`fast.py`](fast.py) | How fast is it? (prints a table) | [`docs/page.md#the-figures`](../docs/page.md#the-figures) " \
           "| 3 s on one core | 2026-01-01 (the figure's date) | `test_smoke.py` (slow) |" in page
    assert "| [`shared.py`](shared.py) | Shared `helpers`. | `fast.py` |" in page


def test_a_missing_field_a_wrong_heading_and_a_missing_smoke_test_are_named(tmp_path):
    script = SCRIPT.replace('MEASURED = "3 s on one core"\n', "").replace("#the-figures", "#gone")
    modules, smoke = _project(tmp_path, script, smoke="SMOKE = {}\n")
    assert problems(modules, smoke, tmp_path) == [
        "benchmarks/fast.py: no MEASURED field",
        "benchmarks/fast.py: REPRODUCES docs/page.md#gone: no such heading in docs/page.md",
        "benchmarks/fast.py: no test under tests/benchmarks/ smoke-runs it (its SMOKE dict)",
    ]


def test_a_smoke_test_of_a_script_that_is_gone_and_an_unknown_group_are_named(tmp_path):
    modules, smoke = _project(tmp_path, SCRIPT.replace('"hardware"', '"speed"'),
                              smoke='SMOKE = {"fast.py": ((), "x"), "retired.py": ((), "x")}\n')
    assert problems(modules, smoke, tmp_path) == [
        f"benchmarks/fast.py: GROUP 'speed' is none of {sorted(GROUPS)}",
        "tests/benchmarks/test_smoke.py: SMOKE names retired.py, no script of benchmarks/",
    ]


def test_the_summary_is_the_docstrings_first_paragraph_on_one_line():
    assert summary_of("What it\n  measures, ``here``.\n\nDetails.") == "What it measures, `here`."
    assert summary_of(None) == ""

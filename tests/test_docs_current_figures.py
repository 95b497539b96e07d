"""The current figures are stated once: README's held-out table, the results page's current
table and the committed copy of the default run's report (``docs/results/default_run_evaluation.md``,
a copy of its ``data/08_reporting/evaluation.md``) hold the same numbers.

Refresh the copy after a default run that changes them:
``cp data/08_reporting/evaluation.md/<newest version>/evaluation.md docs/results/default_run_evaluation.md``
(and list it in mkdocs.yml's nav), then bring README's and docs/results.md's tables to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "results" / "default_run_evaluation.md"

# A row of the README / results tables -> the report's agent (the default evaluates sampled only).
AGENTS = {"random valid action": "random", "Stage-1 checkpoint": "stage1-sampled", "SEED (4 updates)": "rl-sampled"}


def held_out_table(path: Path) -> dict[tuple[str, str], str]:
    """The ``| agent | seen ... | unseen ... |`` table: {(report agent, split): "36.0 (24.1-49.9)"}."""
    rows: dict[tuple[str, str], str] = {}
    lines = path.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"\|\s*agent\s*\|\s*seen\b.*\|\s*unseen\b", line)]
    assert len(starts) == 1, f"{path.name}: expected one held-out table (| agent | seen ... | unseen ... |), found {len(starts)}"
    for line in lines[starts[0] + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[0] in AGENTS, f"{path.name}: unknown row {cells[0]!r} (known: {sorted(AGENTS)})"
        rows[(AGENTS[cells[0]], "seen")], rows[(AGENTS[cells[0]], "unseen")] = cells[1], cells[2]
    assert len(rows) == 2 * len(AGENTS), f"{path.name}: the table needs the rows {sorted(AGENTS)}"
    return rows


def report_table(path: Path) -> dict[tuple[str, str], str]:
    """The report's rows over all task types: {(agent, split): "success % (95% CI)"}."""
    rows = {}
    for line in path.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[2] == "all" and cells[0] in AGENTS.values():
            rows[(cells[0], cells[1])] = cells[4]
    return rows


def test_the_readme_and_the_results_page_give_the_same_held_out_figures():
    assert held_out_table(ROOT / "README.md") == held_out_table(ROOT / "docs" / "results.md")


def test_the_readme_gives_the_default_runs_report():
    if not REPORT.exists():
        pytest.xfail(
            "docs/results/default_run_evaluation.md is missing: the copy committed before was the "
            "JSON-skills default's of 2026-11-30 (now docs/journal/2026-11-30-default-run-evaluation.md); "
            "commit the current default run's report there (module docstring)"
        )
    report = report_table(REPORT)
    readme = held_out_table(ROOT / "README.md")
    missing = sorted(set(readme) - set(report))
    assert not missing, f"{REPORT.name} has no 'all' row for {missing}"
    assert readme == {key: report[key] for key in readme}


def test_the_table_reader_reads_the_report_format(tmp_path):
    """The reader against the report's format, so that the check above cannot pass by reading nothing."""
    report = tmp_path / "evaluation.md"
    report.write_text(
        "| agent | split | task type | episodes | success % (95% CI) | mean steps | invalid % |\n"
        "|---|---|---|---:|---|---:|---:|\n"
        "| random | seen | all | 50 | 10.0 (4.3-21.4) | 19.4 | 0.0 |\n"
        "| random | seen | twc | 25 | 20.0 (8.9-39.1) | 19.0 | 0.0 |\n"
        "| rl-greedy | seen | all | 50 | 22.0 (12.8-35.2) | 14.4 | 0.0 |\n"
        "| rl-sampled | unseen | all | 50 | 26.0 (15.9-39.6) | 14.8 | 0.0 |\n"
    )
    assert report_table(report) == {("random", "seen"): "10.0 (4.3-21.4)", ("rl-sampled", "unseen"): "26.0 (15.9-39.6)"}
    journal = report_table(ROOT / "docs" / "journal" / "2026-11-30-default-run-evaluation.md")
    assert journal[("stage1-sampled", "seen")] == "24.0 (14.3-37.4)" and len(journal) == 6

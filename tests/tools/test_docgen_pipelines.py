"""docs/pipelines.md's pipeline table is what the registry says (``tools.docgen.pipelines``),
and the README's two short pipeline tables name exactly the registered pipelines, those of
``kedro run`` in the first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hindsight.pipeline_registry import STAGES, register_pipelines
from tools.docgen.blocks import embedded
from tools.docgen.pipelines import BEGIN, DEFAULT, END, PIPELINES, in_default, render, stages

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pipelines():
    return register_pipelines()


def test_the_committed_pipeline_table_is_current(pipelines):
    page = (ROOT / "docs" / "pipelines.md").read_text()
    assert page == embedded(page, render(pipelines, tuple(STAGES)), BEGIN, END), (
        "docs/pipelines.md's pipeline table is out of date with the registry; regenerate it with "
        "`python -m tools.docgen.pipelines docs/pipelines.md`"
    )


def test_kedro_run_is_the_stages_in_run_order(pipelines):
    assert stages(pipelines[DEFAULT], tuple(STAGES)) == list(STAGES)
    assert [name for name in pipelines if name != DEFAULT and in_default(pipelines, name)] == list(STAGES)
    assert stages(pipelines["with_state2state"], tuple(STAGES)).index("state2state") == 4  # before training


def readme_pipeline_tables(text: str) -> list[tuple[str, set[str]]]:
    """The README's "Pipelines" section: (each table's first header cell, the pipeline names
    of its rows' first cells)."""
    section = text.split("\n## Pipelines\n", 1)[1].split("\n## ", 1)[0]
    tables: list[tuple[str, set[str]]] = []
    lines = section.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("|") and (index == 0 or not lines[index - 1].startswith("|")):
            title = line.strip("|").split("|")[0].strip()
            names: set[str] = set()
            for row in lines[index + 2:]:
                if not row.startswith("|"):
                    break
                names |= set(re.findall(r"`([^`]+)`", row.strip("|").split("|")[0]))
            tables.append((title, names))
    return tables


def test_the_readme_names_every_registered_pipeline_and_those_of_kedro_run_first(pipelines):
    (first_title, first), (second_title, second) = readme_pipeline_tables((ROOT / "README.md").read_text())
    assert first_title == "in the default run" and second_title == "outside it"
    default = {name for name in pipelines if name != DEFAULT and in_default(pipelines, name)}
    assert first == default, f"README's default-run table: {sorted(first ^ default)} differ from the registry's __default__"
    others = set(pipelines) - default - {DEFAULT}
    assert second == others, f"README's other pipelines: {sorted(second ^ others)} differ from the registry"


def test_a_pipeline_without_an_entry_or_a_main_output_it_does_not_write_is_refused(pipelines, monkeypatch):
    with pytest.raises(ValueError, match="registered without an entry \\['extra'\\]"):
        render({**pipelines, "extra": pipelines["scoring"]}, tuple(STAGES))
    monkeypatch.setitem(PIPELINES, "scoring", ("scores", ("scores", "rl_policy")))
    with pytest.raises(ValueError, match="'scoring' that it does not write: \\['rl_policy'\\]"):
        render(pipelines, tuple(STAGES))

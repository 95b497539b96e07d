"""The method-hook table of docs/methods.md is what the method classes say
(``tools.docgen.method_hooks``): the committed page equals the page regenerated from the
code, and the table reads overrides as the classes define them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight.methods import Method
from hindsight.methods.registry import BUILT_IN
from tools.docgen.method_hooks import BEGIN, END, defining_class, embedded, hooks, render

pytestmark = pytest.mark.unit

PAGE = Path(__file__).resolve().parents[2] / "docs" / "methods.md"


def row(table: str, hook: str) -> dict[str, str]:
    """The table's cells of ``hook`` by column title."""
    lines = [line for line in table.splitlines() if line.startswith("|")]
    titles = [cell.strip() for cell in lines[0].strip("|").split("|")]
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0].startswith(f"`{hook}"):
            return dict(zip(titles, cells))
    raise AssertionError(f"no row for {hook}")


def test_the_committed_page_is_current():
    page = PAGE.read_text()
    assert page == embedded(page, render()), (
        "docs/methods.md's method-hook table is out of date with the method classes; regenerate it with "
        "`python -m tools.docgen.method_hooks docs/methods.md`"
    )


def test_every_registered_method_and_every_hook_has_its_place():
    table = render()
    header = table.splitlines()[2]
    assert all(f"`{cls.name}`" in header for cls in BUILT_IN)
    for hook in hooks():
        row(table, hook)
    assert "name" not in hooks() and "check" in hooks() and "extra_loss_terms" in hooks()


def test_overrides_are_read_from_the_classes():
    table = render()
    assert row(table, "check")["`seed`"] == "yes"  # SEED refuses step_weights with its release score
    assert row(table, "episode_scores")["`seed`"] == "yes"
    assert row(table, "start")["`wmr1`"] == "yes"
    assert row(table, "analyze")["`seed`"] == "yes"  # SEED adds its gate on labelled actions
    assert row(table, "analyze")["`opid`"] == "`SkillDistillation`"
    assert all(cell == "" for title, cell in row(table, "advantages").items() if title == "`grpo`")


def test_a_new_method_shows_what_it_overrides():
    class Base(Method):
        def analyze(self, policy, batch, rl):
            return {}

    class Mine(Base):
        def check(self, rl, *, parallel):
            pass

    assert defining_class(Mine, "check") is Mine
    assert defining_class(Mine, "analyze") is Base
    assert defining_class(Mine, "advantages") is None


def test_a_page_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="no generated method-hook table"):
        embedded("# a page\n", render())
    assert render().startswith(BEGIN) and render().endswith(END)

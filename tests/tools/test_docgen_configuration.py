"""The configuration reference (``docs/configuration.md``) is generated from the settings
dataclasses' field docstrings, and the committed file equals what the code generates."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hindsight.config import file_settings
from tools.docgen.configuration import render
from tools.docgen.fields import field_docs
from hindsight.params import block_keys

pytestmark = pytest.mark.unit

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


@dataclasses.dataclass
class _Documented:
    """A settings class."""

    plain: int = 1
    """One line."""
    undocumented: str = "x"
    spread: float | None = None
    """Over
    two lines."""


def test_field_docs_reads_the_string_after_each_field():
    assert field_docs(_Documented) == {"plain": "One line.", "undocumented": "", "spread": "Over\ntwo lines."}


def test_the_committed_reference_is_what_the_code_generates():
    assert REFERENCE.read_text() == render(), (
        "docs/configuration.md is out of date with the settings dataclasses; regenerate it with "
        "`python -m tools.docgen.configuration > docs/configuration.md`"
    )


def test_the_reference_has_every_file_and_every_top_level_key():
    text = render()
    for file_name, (block, cls) in file_settings().items():
        assert f"## `{file_name}`" in text
        for name in block_keys(cls):  # a not_a_key field is no key (params.not_a_key)
            key = f"{block}.{name}" if block else name
            assert f"- `{key}` (" in text, key

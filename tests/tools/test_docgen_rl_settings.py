"""The grouped view of an RL run's settings (``docs/rl_settings.md``) is generated from the
settings dataclasses (``tools.docgen.rl_settings``): every field of ``RLConfig`` and of the
``training`` block has a group, so a new setting cannot go unlisted, and the committed page
equals a fresh generation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hindsight.config.files import file_settings
from hindsight.methods import method_class, method_names
from hindsight.params import NOT_A_KEY
from hindsight.training.rl_config import RLConfig
from tools.docgen.rl_settings import GROUPS, RL_GROUPS, TRAINING_GROUPS, render

pytestmark = pytest.mark.unit

PAGE = Path(__file__).resolve().parents[2] / "docs" / "rl_settings.md"


def keys(cls: type) -> set[str]:
    """The field names of ``cls`` that are keys of a parameters file."""
    return {f.name for f in dataclasses.fields(cls) if f.init and not f.metadata.get(NOT_A_KEY)}


def test_every_field_of_rl_config_has_a_group():
    missing = sorted(keys(RLConfig) - set(RL_GROUPS))
    assert not missing, (
        f"RLConfig fields without a group in tools/docgen/rl_settings.py's RL_GROUPS: {missing}; "
        "add each to the group it controls and regenerate docs/rl_settings.md"
    )
    assert set(RL_GROUPS) <= keys(RLConfig), "RL_GROUPS names fields RLConfig no longer has"
    assert set(RL_GROUPS.values()) <= set(GROUPS)


def test_every_field_of_the_training_block_has_a_group():
    _, training = file_settings()["parameters_training.yml"]
    assert keys(training) == set(TRAINING_GROUPS), (
        "the training block's fields and tools/docgen/rl_settings.py's TRAINING_GROUPS differ"
    )
    assert {group for group in TRAINING_GROUPS.values() if group} <= set(GROUPS)


def test_the_page_lists_every_key_of_rl_config_and_of_each_method():
    page = render()
    for name in keys(RLConfig):
        assert f"- `training.rl.{name}` (" in page, name
    for name in method_names():
        method = method_class(name)
        if method.__module__.startswith("hindsight.methods."):
            for field in keys(method.Settings):
                assert f"- `training.rl.methods.{name}.{field}` (" in page, (name, field)
    for heading, _ in GROUPS.values():
        assert f"## {heading}\n" in page


def test_the_committed_page_is_what_the_code_generates():
    assert PAGE.read_text() == render(), (
        "docs/rl_settings.md is out of date with the settings dataclasses; regenerate it with "
        "`python -m tools.docgen.rl_settings > docs/rl_settings.md`"
    )

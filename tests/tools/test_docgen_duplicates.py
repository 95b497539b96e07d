"""Every setting name declared by more than one settings dataclass says why in a field
docstring (``tools.docgen.duplicates``), and the library settings the blocks hold
(``SamplingConfig``, ``RolloutConfig``, ``HeldoutPlay``, ``WorldModelSettings``) are held,
not copied field by field."""

from __future__ import annotations

import dataclasses

import pytest

from hindsight.config import ProjectConfig, WorldModelConfig
from hindsight.params import block_keys
from tools.docgen.duplicates import declarations, duplicates, markdown, reason, settings_classes
from tools.docgen.configuration import render
from hindsight.evaluation.heldout import HeldoutConfig, HeldoutPlay
from hindsight.policy.generation import SamplingConfig
from hindsight.rollout.config import RolloutConfig
from hindsight.world_model.environment import WorldModelSettings

pytestmark = pytest.mark.unit


def test_every_name_declared_twice_says_why_in_a_docstring():
    unexplained = {
        name: [d.where for d in group] for name, group in duplicates().items() if reason(group) is None
    }
    assert not unexplained, (
        f"setting names declared by several classes without a reason: {unexplained}. Hold the one "
        "dataclass instead of copying its fields, or, when the fields mean different things, name every "
        "other declaring class in one declaration's field docstring, saying how they differ."
    )


@dataclasses.dataclass
class _Plain:
    budget: int = 1
    """Tokens."""


@dataclasses.dataclass
class _Copy:
    budget: int = 2
    """Tokens too."""


@dataclasses.dataclass
class _Explained:
    budget: int = 3
    """Steps of an optimizer, not the tokens of ``_Plain``."""


def test_a_name_declared_again_without_naming_the_other_class_has_no_reason():
    plain, copy, explained = (declarations(cls)[0] for cls in (_Plain, _Copy, _Explained))
    assert reason([plain, copy]) is None
    assert reason([plain, explained]) is explained
    assert reason([plain, copy, explained]) is None  # it names _Plain, not _Copy


def test_the_scan_reaches_the_library_settings_the_blocks_hold_or_build():
    classes = set(settings_classes())
    assert {RolloutConfig, SamplingConfig, HeldoutConfig, HeldoutPlay, WorldModelConfig, WorldModelSettings} <= classes


def _own(cls) -> set[str]:
    return {d.name for d in declarations(cls)}


def test_the_nested_settings_are_declared_once():
    assert not _own(RolloutConfig) & _own(SamplingConfig)
    assert not _own(HeldoutConfig) & _own(HeldoutPlay)
    assert not _own(WorldModelConfig) & _own(WorldModelSettings)
    assert not set(block_keys(ProjectConfig)) & set(block_keys(RolloutConfig))  # its seed is no key: each stage's stream


def test_the_reference_lists_each_name_with_its_classes_and_reason():
    section = markdown()
    assert section in render()
    for name, group in duplicates().items():
        line = next(line for line in section.splitlines() if line.startswith(f"- `{name}`:"))
        assert all(d.where in line for d in group), name
    assert "No reason given" not in section

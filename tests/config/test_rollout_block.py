"""The ``rollout`` block is the rollout engine's settings as they are: a key's path is its
attribute path (``rollout.sampling.temperature`` is ``ProjectConfig.rollout.sampling.temperature``),
the fields each stage sets are no keys (``params.not_a_key``), a stage that decodes otherwise
names its changes to ``rollout.sampling`` (``RolloutConfig.at``), and ``temperature`` is a
field of one settings class only."""

from __future__ import annotations

import dataclasses

import pytest

import hindsight.config as config_package
from hindsight.config import ProjectConfig, SkillsConfig, TeacherFitConfig, OpenAIEndpointConfig
from hindsight.evaluation.heldout import HeldoutPlay
from hindsight.params import ParameterError, as_dict, block_keys, build
from hindsight.policy.generation import SamplingConfig
from hindsight.rollout.config import RolloutConfig

pytestmark = pytest.mark.unit


def test_the_rollout_block_is_the_engines_settings_key_for_key():
    project = build(ProjectConfig, {"rollout": {"sampling": {"temperature": 0.7, "max_batch_tokens": 512}, "max_parallel": 4, "prompt": {"history_window": 3}}})
    rollout = project.rollout
    assert isinstance(rollout, RolloutConfig)
    assert (rollout.sampling.temperature, rollout.sampling.max_batch_tokens, rollout.max_parallel) == (0.7, 512, 4)
    assert rollout.prompt.history_window == 3 and rollout.prompt.show_valid_actions is False  # the project's default kept
    assert rollout.sampling.max_length == 1024  # a key left out keeps the project's default
    played = project.rollout_config(group_size=5, sampling={"temperature": 0.0}, seed=9)
    assert (played.group_size, played.sampling.temperature, played.seed, played.max_parallel) == (5, 0.0, 9, 4)
    assert played.sampling.max_batch_tokens == 512  # the keys a stage does not change are the block's
    assert project.rollout.sampling.temperature == 0.7  # the stage's own decoding is a copy's


def test_the_fields_each_stage_sets_are_no_keys():
    keys = set(block_keys(RolloutConfig))
    assert {"sampling", "prompt", "layout", "backend", "backend_compute_type", "max_parallel"} <= keys
    assert not {"group_size", "seed", "max_steps", "imagination", "temperature"} & keys
    for key in ("group_size", "temperature", "engine"):
        with pytest.raises(ParameterError, match=rf"'rollout.{key}'.*known keys of 'rollout' are \[.*'sampling'"):
            build(ProjectConfig, {"rollout": {key: 1}})


def test_a_wrong_value_or_change_names_its_key():
    with pytest.raises(ParameterError, match=r"parameter 'rollout.sampling.temperature' .* must be a number"):
        build(ProjectConfig, {"rollout": {"sampling": {"temperature": "hot"}}})
    with pytest.raises(ParameterError, match=r"'skills.sampling.temprature'"):
        build(SkillsConfig, {"sampling": {"temprature": 0.4}}, "skills")
    with pytest.raises(ParameterError, match=r"stage1.teacher_fit.sampling.temperature must be > 0"):
        build(TeacherFitConfig, {"sampling": {"temperature": 0.0}}, "stage1.teacher_fit")
    with pytest.raises(ParameterError, match=r"only its temperature"):
        build(OpenAIEndpointConfig, {"sampling": {"top_p": 0.9}}, "skills.openai")
    with pytest.raises(ParameterError, match=r"'decodings.greedy.temperature' .* must be a number"):
        HeldoutPlay(decodings={"greedy": {"temperature": "cold"}})
    assert HeldoutPlay(decodings={"greedy": {"temperature": 0}}).decodings["greedy"]["temperature"] == 0.0
    assert isinstance(HeldoutPlay(decodings={"greedy": {"temperature": 0}}).decodings["greedy"]["temperature"], float)


def test_as_dict_writes_the_block_as_the_yaml_has_it():
    rollout = as_dict(ProjectConfig())["rollout"]
    assert rollout["sampling"]["temperature"] == 1.0 and rollout["prompt"]["history_window"] == 2
    assert rollout["backend"] == "torch" and not {"group_size", "seed", "imagination", "temperature"} & set(rollout)


def _settings_classes() -> set[type]:
    """Every settings dataclass a parameters file reaches, nested ones included."""
    seen: set[type] = set()

    def walk(cls: type) -> None:
        if cls in seen:
            return
        seen.add(cls)
        for field in dataclasses.fields(cls):
            default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
            values = default.values() if isinstance(default, dict) else default if isinstance(default, list) else [default]
            for value in values:
                if dataclasses.is_dataclass(value) and not isinstance(value, type):
                    walk(type(value))

    for _, cls in config_package.file_settings().values():
        walk(cls)
    return seen


def test_temperature_is_a_field_of_one_settings_class():
    classes = _settings_classes()
    assert {ProjectConfig, RolloutConfig, SamplingConfig, SkillsConfig, TeacherFitConfig, OpenAIEndpointConfig} <= classes
    with_temperature = {cls.__name__ for cls in classes if "temperature" in {field.name for field in dataclasses.fields(cls)}}
    assert with_temperature == {"SamplingConfig"}

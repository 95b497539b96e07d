"""A library dataclass held flat in a parameter block (``params.flat_field``): its keys are the
block's own (``rollout.temperature``, ``world_model.history``), the holding field is no key,
the skipped fields are no keys, and ``as_dict`` writes the block as the YAML has it."""

from __future__ import annotations

import pytest

from hindsight.config import ProjectConfig, WorldModelConfig
from hindsight.params import ParameterError, as_dict, block_keys, build


def test_the_rollout_block_reaches_the_engine_and_its_decoding():
    project = build(ProjectConfig, {"rollout": {"temperature": 0.7, "max_batch_tokens": 512, "max_parallel": 4, "prompt": {"history_window": 3}}})
    engine = project.rollout.engine
    assert (engine.sampling.temperature, engine.sampling.max_batch_tokens, engine.max_parallel) == (0.7, 512, 4)
    assert engine.prompt.history_window == 3 and engine.prompt.show_valid_actions is False  # the project's default kept
    assert engine.sampling.max_length == 1024  # a key left out keeps the project's default
    played = project.rollout_config(group_size=5, temperature=0.0, seed=9)
    assert (played.group_size, played.sampling.temperature, played.seed, played.max_parallel) == (5, 0.0, 9, 4)
    assert project.rollout.engine.sampling.temperature == 0.7  # the stage's own temperature is a copy's


def test_the_holding_field_and_the_stage_owned_fields_are_no_keys():
    keys = block_keys(type(ProjectConfig().rollout))
    assert {"temperature", "max_length", "prompt", "layout", "backend"} <= set(keys)
    assert not {"engine", "sampling", "group_size", "seed", "max_steps", "imagination"} & set(keys)
    for key in ("sampling", "group_size", "engine"):
        with pytest.raises(ParameterError, match=rf"'rollout.{key}'.*known keys of 'rollout' are \[.*'temperature'"):
            build(ProjectConfig, {"rollout": {key: 1}})
    with pytest.raises(ParameterError, match=r"'world_model.max_length'"):  # the query's budget is sft.max_length
        build(WorldModelConfig, {"max_length": 512}, "world_model")


def test_a_wrong_value_names_the_flat_key():
    with pytest.raises(ParameterError, match=r"parameter 'rollout.temperature' .* must be a number"):
        build(ProjectConfig, {"rollout": {"temperature": "hot"}})


def test_as_dict_writes_the_block_flat():
    rollout = as_dict(ProjectConfig())["rollout"]
    assert rollout["temperature"] == 1.0 and rollout["prompt"]["history_window"] == 2
    assert "engine" not in rollout and "sampling" not in rollout and "group_size" not in rollout
    world_model = build(WorldModelConfig, {"history": 1, "max_new_tokens": 64, "sft": {"max_length": 512}}, "world_model")
    assert (world_model.query.history, world_model.query_settings().max_length) == (1, 512)
    assert {"history", "max_new_tokens", "max_observation_chars"} <= set(as_dict(world_model)) and "query" not in as_dict(world_model)

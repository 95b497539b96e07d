"""The grid's opt-in methods grpo_state2state and grpo_async, and where cells start
(``experiments.starts``): what each method switches on, which catalog model it needs, and
the message when that model is missing. The grid runs them in
``tests/pipelines/test_pipeline_experiments_starts.py``."""

from __future__ import annotations

import pytest

from hindsight.config import ExperimentsConfig
from hindsight.experiments.grid import Cell, cell_rl_config
from hindsight.experiments.starts import MissingGridInput, catalog_models_for, needed_catalog_models
from hindsight.pipelines.experiments.nodes import grid_starts, grid_world_model
from hindsight.training.rl_config import RLConfig


def test_new_methods_switch_on_their_start_or_option_only():
    base = RLConfig(updates=3, tasks_per_update=2, group_size=2)
    start_from, config = cell_rl_config(base, Cell(method="grpo_state2state", seed=0, fraction=1.0))
    assert start_from == "state2state" and config.algorithm == "grpo" and not config.schedulers.async_rollouts.enabled
    start_from, config = cell_rl_config(base, Cell(method="grpo_async", seed=0, fraction=1.0))
    assert start_from == "base" and config.algorithm == "grpo"
    assert config.schedulers.async_rollouts.enabled and config.schedulers.async_rollouts.max_staleness == 1
    _, grpo = cell_rl_config(base, Cell(method="grpo", seed=0, fraction=1.0))
    for field in ("updates", "tasks_per_update", "group_size", "learning_rate"):  # the same budget as grpo
        assert getattr(config, field) == getattr(grpo, field)
    presets = ExperimentsConfig().presets.values()
    assert all(name not in preset.methods for preset in presets for name in ("grpo_state2state", "grpo_async", "wmr1"))


def test_only_the_models_listed_methods_need_are_passed_on():
    assert needed_catalog_models(["grpo", "grpo_async", "seed"]) == {}
    assert needed_catalog_models(["wmr1", "grpo_state2state"]) == {"world_model": ["wmr1"], "state2state": ["grpo_state2state"]}
    found = {"state2state": "s2s checkpoint", "world_model": "world model"}
    assert catalog_models_for(["grpo", "grpo_async"], found, where="here") == {}
    assert catalog_models_for(["grpo_state2state"], found, where="here") == {"state2state": "s2s checkpoint"}


def test_a_missing_model_names_the_command_that_makes_it():
    with pytest.raises(MissingGridInput) as error:
        catalog_models_for(["wmr1", "grpo_state2state"], {"state2state": None, "world_model": "world model"}, "experiments.presets.quick.methods")
    message = str(error.value)
    assert "grpo_state2state" in message and "`kedro run --pipeline state2state`" in message
    assert "experiments.presets.quick.methods" in message
    assert "world_model" not in message  # it is there


def test_grid_starts_gather_the_checkpoints_and_the_world_model():
    passed = grid_world_model({"state2state": "s2s"}, None, None, None)  # no wmr1 listed: nothing to build
    starts = grid_starts("stage1 policy", "base policy", passed)
    assert starts.policies == {"stage1": "stage1 policy", "base": "base policy", "state2state": "s2s"}
    assert starts.world_model is None
    assert grid_starts("s1", "b", {"world_model": "simulator"}).world_model == "simulator"
    with pytest.raises(MissingGridInput, match="state2state"):
        grid_starts("s1", "b", {}).policy("state2state")

"""The grid's scheduler methods: each cell's RL settings switch on its option,
and the default presets leave them out (the default grid takes no longer)."""

from __future__ import annotations

import pytest

from hindsight.config import ExperimentsConfig
from hindsight.experiments.grid import Cell, GridSpec, cell_rl_config
from hindsight.experiments.methods import METHODS
from hindsight.training.rl_config import RLConfig

pytestmark = pytest.mark.unit


def test_each_method_switches_on_its_option_only():
    base = RLConfig(updates=2, schedulers={"stepo": {"filter_max_rounds": 1}})
    switched = {
        "grpo_stepo": {("stepo", "step_weights"): True, ("stepo", "filter_zero_variance"): True, ("stepo", "pass_rate_band"): (0.0, 1.0)},
        "grpo_curriculum": {("curriculum", "enabled"): True},
        "grpo_odysse": {("odysse", "episode_minibatches"): True},
        "grpo_espo": {("odysse", "episode_minibatches"): True, ("odysse", "objective"): "espo"},
    }
    options = [
        ("stepo", "step_weights"), ("stepo", "filter_zero_variance"), ("stepo", "pass_rate_band"), ("curriculum", "enabled"),
        ("odysse", "episode_minibatches"), ("odysse", "objective"), ("async_rollouts", "enabled"),
    ]
    for name, changed in switched.items():
        start_from, config = cell_rl_config(base, Cell(method=name, seed=0, fraction=1.0))
        assert start_from == "base" and config.algorithm == "grpo" and config.updates == 2
        assert config.schedulers.stepo.filter_max_rounds == 1, name  # the base run's scheduler settings merged key by key
        for block, key in options:
            expected = changed.get((block, key), getattr(getattr(base.schedulers, block), key))
            assert getattr(getattr(config.schedulers, block), key) == expected, (name, block, key)


def test_scheduler_methods_run_when_a_preset_names_them():
    presets = ExperimentsConfig().presets
    assert all(name not in preset.methods for preset in presets.values() for name in ("grpo_stepo", "grpo_curriculum", "grpo_odysse", "grpo_espo"))
    grid = GridSpec(methods=["grpo", "grpo_stepo", "grpo_curriculum", "grpo_odysse"], seeds=[0], fractions=[1.0])
    assert [cell.method for cell in grid.cells()] == ["grpo", "grpo_stepo", "grpo_curriculum", "grpo_odysse"]
    assert {METHODS[name].label for name in ("grpo_stepo", "grpo_curriculum", "grpo_odysse")} == {
        "GRPO + STEPO", "GRPO + curriculum", "GRPO + ODYSSE sampler",
    }


def test_the_settings_build_from_a_parameter_block():
    from hindsight.params import ParameterError, build

    config = build(RLConfig, {"schedulers": {"stepo": {"pass_rate_band": [0.0, 1.0], "step_weights": True}}}, "training.rl")
    assert config.schedulers.stepo.pass_rate_band == (0.0, 1.0) and config.schedulers.stepo.step_weights
    assert config.schedulers.curriculum == RLConfig().schedulers.curriculum  # the other blocks keep their defaults
    with pytest.raises(ParameterError, match=r"'training.rl.schedulers.curriculum.enabled'.*must be true or false"):
        build(RLConfig, {"schedulers": {"curriculum": {"enabled": "yes"}}}, "training.rl")


@pytest.mark.parametrize("old", ["stepo_step_weights", "curriculum", "async_rollouts", "clip_high", "rollout_dtype"])
def test_a_flat_key_of_the_blocks_is_refused_as_any_unknown_key(old):
    """A block's key given flat under ``training.rl`` is an unknown key: named with its file
    and the known keys, like a misspelt one (no redirect to its block)."""
    from hindsight.params import ParameterError, build
    from hindsight.training.rl_config import with_overrides

    with pytest.raises(ParameterError, match=rf"unknown parameter key\(s\) 'training.rl.{old}' .*parameters_training.yml") as raised:
        build(RLConfig, {old: True}, "training.rl")
    assert "moved" not in str(raised.value)
    with pytest.raises(ParameterError, match=rf"unknown key\(s\) \['training.rl.{old}'\]"):
        with_overrides(RLConfig(), {old: True})


def test_an_unknown_override_key_is_named():
    from hindsight.params import ParameterError
    from hindsight.training.rl_config import with_overrides

    with pytest.raises(ParameterError, match=r"'training.rl.updatez'"):
        with_overrides(RLConfig(), {"updatez": 3})
    with pytest.raises(ParameterError, match=r"'training.rl.schedulers.stepo.step_weightz'"):
        with_overrides(RLConfig(), {"schedulers": {"stepo": {"step_weightz": True}}})


def test_rl_config_holds_the_core_loops_settings_and_blocks():
    """No scheduler knob is a field of ``RLConfig`` any more; the blocks merge key by key."""
    import dataclasses

    from hindsight.training.rl_config import with_overrides

    names = [field.name for field in dataclasses.fields(RLConfig)]
    assert not [name for name in names if name.startswith(("stepo_", "curriculum", "odysse_", "async_", "sampler_", "pass_rate"))]
    assert {"methods", "schedulers", "ppo", "rollout_weights"} <= set(names) and len(names) <= 21  # 21: end_policy and action_labels, the loop's own
    config = with_overrides(RLConfig(), {"ppo": {"clip_high": 0.28}, "rollout_weights": {"dtype": "auto"}})
    assert (config.ppo.clip_high, config.ppo.clip_low, config.ppo.loss_agg) == (0.28, 0.2, "token-mean")
    assert (config.rollout_weights.dtype, config.rollout_weights.merge_lora) == ("auto", True)
    with pytest.raises(ValueError, match="training.rl.ppo.loss_agg must be one of"):
        RLConfig(ppo={"loss_agg": "sum"})
    with pytest.raises(ValueError, match="training.rl.rollout_weights.dtype must be"):
        RLConfig(rollout_weights={"dtype": "float16"})

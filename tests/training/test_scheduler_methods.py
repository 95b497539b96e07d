"""The grid's scheduler methods: each cell's RL settings switch on its option,
and the default presets leave them out (the default grid takes no longer)."""

from __future__ import annotations

from hindsight.config import ExperimentsConfig
from hindsight.experiments.grid import Cell, GridSpec, cell_rl_config
from hindsight.experiments.methods import METHODS
from hindsight.training.rl_config import RLConfig


def test_each_method_switches_on_its_option_only():
    base = RLConfig(updates=2)
    switched = {
        "grpo_stepo": {"stepo_step_weights": True, "stepo_filter_zero_variance": True, "stepo_pass_rate_band": (0.0, 1.0)},
        "grpo_curriculum": {"curriculum": True},
        "grpo_odysse": {"odysse_episode_minibatches": True},
        "grpo_espo": {"odysse_episode_minibatches": True, "odysse_objective": "espo"},
    }
    defaults = RLConfig()
    for name, options in switched.items():
        start_from, config = cell_rl_config(base, Cell(method=name, seed=0, fraction=1.0))
        assert start_from == "base" and config.algorithm == "grpo" and config.updates == 2
        for option in (
            "stepo_step_weights", "stepo_filter_zero_variance", "stepo_pass_rate_band", "curriculum",
            "odysse_episode_minibatches", "odysse_objective",
        ):
            assert getattr(config, option) == options.get(option, getattr(defaults, option)), (name, option)


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

    config = build(RLConfig, {"stepo_pass_rate_band": [0.0, 1.0], "stepo_step_weights": True}, "training.rl")
    assert config.stepo_pass_rate_band == (0.0, 1.0) and config.stepo_step_weights
    try:
        build(RLConfig, {"curriculum": "yes"}, "training.rl")
    except (ParameterError, ValueError) as error:
        assert "training.rl.curriculum" in str(error)
    else:
        raise AssertionError("a string for a boolean setting must be refused")

"""A method declares the core settings it cannot train without (``Method.requires``), and a
configuration that lacks one is refused when the parameters are read, naming the parameter;
settings built in code meet the same check before the first rollout."""

from __future__ import annotations

import dataclasses

import pytest

from hindsight.config import State2StateConfig, TrainingConfig
from hindsight.methods import Method, method_class, method_names, registry
from hindsight.params import ParameterError, build
from hindsight.training.method import check_requirements, required_setting, unmet_requirements
from hindsight.training.rl_config import RLConfig

pytestmark = pytest.mark.unit

TOKEN_SUM = {"ppo": {"loss_agg": "seq-mean-token-sum"}}


class TokenSumMethod(Method):
    """A method whose loss only makes sense summed over tokens (as Dr. GRPO-like ones are)."""

    requires = {"ppo.loss_agg": "seq-mean-token-sum", "std_normalize": False}


@pytest.fixture
def token_sum(monkeypatch) -> str:
    """``TokenSumMethod`` registered as ``token_sum`` for one test (the registry restored after)."""
    monkeypatch.setattr(registry, "_METHODS", dict(registry._METHODS))
    registry.register("token_sum")(TokenSumMethod)
    return "token_sum"


def test_a_missing_core_setting_is_refused_when_the_parameters_are_read(token_sum):
    with pytest.raises(ParameterError, match=r"training\.rl\.ppo\.loss_agg must be 'seq-mean-token-sum' for "
                                             r"training\.rl\.algorithm='token_sum' \(the method requires it\), got 'token-mean'"):
        TrainingConfig(rl=RLConfig(algorithm=token_sum))
    with pytest.raises(ParameterError, match=r"training\.rl\.std_normalize must be False .* got True"):
        TrainingConfig(rl=RLConfig(algorithm=token_sum, **TOKEN_SUM))
    met = TrainingConfig(rl=RLConfig(algorithm=token_sum, std_normalize=False, **TOKEN_SUM))
    assert met.rl.ppo.loss_agg == "seq-mean-token-sum"


def test_the_yaml_route_names_the_parameter_and_its_file(token_sum):
    with pytest.raises(ParameterError, match=r"training\.rl\.ppo\.loss_agg must be .*parameters_training\.yml"):
        build(TrainingConfig, {"rl": {"algorithm": token_sum, "std_normalize": False}}, "training")
    training = build(TrainingConfig, {"rl": {"algorithm": token_sum, "std_normalize": False, **TOKEN_SUM}}, "training")
    assert unmet_requirements(TokenSumMethod, training.rl) == []


def test_every_rl_stage_checks_its_own_block(token_sum):
    with pytest.raises(ParameterError, match=r"state2state\.rl\.ppo\.loss_agg must be 'seq-mean-token-sum'"):
        State2StateConfig(rl=RLConfig(algorithm=token_sum))


def test_only_the_picked_method_is_held_to_its_requirements(token_sum):
    TrainingConfig(rl=RLConfig(algorithm="grpo", methods={token_sum: {}}))  # its block given, another method picked


def test_a_built_in_method_declares_what_it_cannot_run_with():
    wmr1 = RLConfig(algorithm="wmr1", schedulers={"async_rollouts": {"enabled": True}})
    with pytest.raises(ParameterError, match=r"training\.rl\.schedulers\.async_rollouts\.enabled must be False for training\.rl\.algorithm='wmr1'"):
        TrainingConfig(rl=wmr1)
    with pytest.raises(ParameterError, match=r"schedulers\.stepo\.filter_zero_variance must be False"):
        TrainingConfig(rl=RLConfig(algorithm="wmr1", schedulers={"stepo": {"filter_zero_variance": True}}))


def test_settings_built_in_code_meet_the_check_before_the_first_rollout(token_sum):
    rl = RLConfig(algorithm=token_sum)  # never read as parameters
    with pytest.raises(ValueError, match=r"requires training\.rl\.ppo\.loss_agg: 'seq-mean-token-sum', got 'token-mean'"):
        check_requirements(TokenSumMethod(), rl)
    check_requirements(TokenSumMethod(), dataclasses.replace(rl, std_normalize=False, ppo=build(type(rl.ppo), TOKEN_SUM["ppo"], "ppo")))


def test_every_requirement_names_a_core_setting():
    for name in method_names():
        for path, wanted in method_class(name).requires.items():
            assert isinstance(required_setting(RLConfig(), path), type(wanted)), (name, path)
    with pytest.raises(ValueError, match=r"training\.rl\.ppo\.loss_aggregation, which the core settings do not have"):
        required_setting(RLConfig(), "ppo.loss_aggregation")

"""The method registry: names -> methods, each method's settings checked by name, and the
built-in methods' hooks on known answers."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest
import torch

from hindsight import algorithms
from hindsight.config import TrainingConfig
from hindsight.methods import Method, build_method, check_method_settings, method_class, method_names, register
from hindsight.params import ParameterError, build
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig, with_overrides

pytestmark = pytest.mark.unit


def test_the_built_in_methods_are_registered():
    assert {"grpo", "gigpo", "seed", "opid", "empo", "wmr1"} <= set(method_names())
    assert method_class("seed").name == "seed"


def test_an_unknown_algorithm_names_the_setting_and_the_known_ones():
    with pytest.raises(ParameterError, match=r"training\.rl\.algorithm must be one of .*'seed'.*got 'sead'"):
        TrainingConfig(rl=RLConfig(algorithm="sead"))


def test_a_method_settings_key_is_checked_against_its_own_settings_class():
    with pytest.raises(ParameterError, match=r"training\.rl\.methods\.seed\.opd_coeff"):
        TrainingConfig(rl=RLConfig(methods={"seed": {"opd_coeff": 1.0}}))
    with pytest.raises(ParameterError, match=r"training\.rl\.methods\.grpo_typo: no RL method"):
        check_method_settings(RLConfig(methods={"grpo_typo": {}}))
    with pytest.raises(ParameterError, match=r"distill_gate must be one of"):
        build_method(RLConfig(methods={"seed": {"distill_gate": "soft"}}))


def test_the_yaml_route_builds_the_method_settings():
    training = build(TrainingConfig, {"rl": {"algorithm": "gigpo", "methods": {"gigpo": {"gamma": 0.5}}}}, "training")
    method = build_method(training.rl)
    assert method.name == "gigpo" and method.settings.gamma == 0.5 and method.settings.step_weight == 1.0


def test_overrides_merge_a_methods_settings_key_by_key():
    base = RLConfig(methods={"seed": {"opd_coef": 0.5, "gate_beta": 2.0}})
    merged = with_overrides(base, {"updates": 9, "methods": {"seed": {"opd_coef": 1.0}}})
    assert merged.updates == 9 and merged.methods == {"seed": {"opd_coef": 1.0, "gate_beta": 2.0}}
    assert base.methods == {"seed": {"opd_coef": 0.5, "gate_beta": 2.0}}  # the base is left as it was


def test_a_second_method_under_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):

        @register("grpo")
        class Impostor(Method):
            pass


def test_which_methods_use_skills():
    assert build_method(RLConfig(algorithm="seed")).uses_skills
    assert not build_method(RLConfig(algorithm="seed", methods={"seed": {"distill": False}})).uses_skills
    assert build_method(RLConfig(algorithm="opid")).uses_skills
    assert not build_method(RLConfig(algorithm="grpo")).uses_skills


def _batch(returns_by_episode: dict[str, tuple[str, list[float]]]) -> RolloutBatch:
    rows = [
        {"episode_id": episode, "group_id": group, "step": step, "reward": reward, "done": step == len(rewards) - 1,
         "won": False, "anchor_observation": f"s{step}", "action_valid": True}
        for episode, (group, rewards) in returns_by_episode.items()
        for step, reward in enumerate(rewards)
    ]
    table = pd.DataFrame(rows)
    return RolloutBatch(table=table, samples=[], played=table)


def test_grpo_is_the_default_advantage_and_the_group_normalised_return():
    batch = _batch({"a": ("g", [0.0, 1.0]), "b": ("g", [0.0]), "c": ("h", [1.0]), "d": ("h", [0.0, 0.0])})
    rl = RLConfig(algorithm="grpo")
    got = build_method(rl).advantages(batch, rl, max_steps=5)
    scores = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    expected = algorithms.group_normalized_advantages(scores, batch.table["group_id"].tolist(), std_normalize=True)
    assert torch.allclose(got, expected)
    assert got[0] > 0 > got[2]  # the winner of group g above its loser


@dataclass
class _Scaled:
    factor: float = 3.0


def test_a_method_overrides_only_the_hook_that_differs():
    class Scaled(Method):
        Settings = _Scaled

        def advantages(self, batch, rl, max_steps):
            return self.settings.factor * super().advantages(batch, rl, max_steps)

    batch = _batch({"a": ("g", [1.0]), "b": ("g", [0.0])})
    rl = RLConfig(algorithm="grpo")
    plain = build_method(rl).advantages(batch, rl, 5)
    assert torch.allclose(Scaled().advantages(batch, rl, 5), 3.0 * plain)
    assert Scaled().extra_loss_terms(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1), "token-mean") == []

"""Infeasible variants of a task and the declare action (``envs.infeasible``), on a tiny
hand-written environment: the named object is absent, declaring wins only on the variant,
the real task plays as before apart from the declare action (a failure there)."""

from __future__ import annotations

import pytest

from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec
from hindsight.envs.infeasible import (
    ABSENT_OBJECT_CANDIDATES,
    DECLARE_ACTION,
    DECLARE_PARAM,
    DeclarableEnvironment,
    absent_object,
    base_spec,
    declare_offered_spec,
    declaring_factory,
    infeasible_spec,
    is_infeasible_group,
)
from hindsight.envs.reward import RewardConfig, step_reward
from hindsight.rollout.tasks import TaskRef
from hindsight.envs.base import ToyEnvironment

SPEC = EnvironmentSpec("toy", "box", {"rooms": 1}, reward=RewardConfig(success_reward=5.0))


class BoxEnv(ToyEnvironment):
    """Open the box to win; the room holds a violin (a candidate object) and a box."""

    GOLD = ("open box",)

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.spec = spec

    def reset(self, seed, split="train"):
        return "You are in a room with a violin and a box.", {
            "task": "Your task is to open the box.", "valid_actions": ["open box", "look"], "won": False, "inventory": "",
        }

    def step(self, action):
        won = action == "open box"
        info = {"valid_actions": ["look"], "won": won, "action_valid": True, "score": float(won)}
        return "The box is open." if won else "A room.", step_reward(won, True, self.spec.reward), won, False, info


def test_the_named_object_is_absent_and_fixed_by_the_seed():
    texts = ["You are in a room with a violin and a box.", "open box"]
    picks = {seed: absent_object(seed, texts) for seed in range(30)}
    assert all(pick != "violin" and pick in ABSENT_OBJECT_CANDIDATES for pick in picks.values())
    assert len(set(picks.values())) > 1 and picks == {seed: absent_object(seed, texts) for seed in range(30)}
    only_left = [c for c in ABSENT_OBJECT_CANDIDATES if c != "hourglass"]
    assert absent_object(3, only_left) == "hourglass"
    with pytest.raises(EnvironmentConfigError, match="no absent object"):
        absent_object(3, list(ABSENT_OBJECT_CANDIDATES))


def test_declaring_wins_only_on_the_infeasible_variant():
    env = DeclarableEnvironment(BoxEnv(SPEC), infeasible=True)
    observation, info = env.reset(4)
    assert env.missing_object in info["task"] and env.missing_object not in observation + " ".join(info["valid_actions"])
    assert info["valid_actions"] == ["open box", "look", DECLARE_ACTION]
    _, reward, terminated, _, info = env.step(DECLARE_ACTION)
    assert (reward, terminated, info["won"]) == (5.0, True, True)
    env.reset(4)  # solving the real game is not the variant's task: no win, the episode ends
    _, reward, terminated, _, info = env.step("open box")
    assert (reward, terminated, info["won"]) == (0.0, True, False)
    assert env.spec.game == "box+infeasible" and env.gold_actions() == [DECLARE_ACTION]


def test_the_real_task_plays_as_before_and_declaring_fails_there():
    plain, env = BoxEnv(SPEC), DeclarableEnvironment(BoxEnv(SPEC), infeasible=False)
    (plain_obs, plain_info), (obs, info) = plain.reset(4), env.reset(4)
    assert obs == plain_obs and info["task"] == plain_info["task"]
    assert info["valid_actions"] == plain_info["valid_actions"] + [DECLARE_ACTION]
    assert env.step("open box")[1:4] == plain.step("open box")[1:4] == (5.0, True, False)
    env.reset(4)
    _, reward, terminated, _, info = env.step(DECLARE_ACTION)
    assert (reward, terminated, info["won"]) == (0.0, True, False)


def test_specs_name_the_variant_and_the_factory_builds_it():
    built = []
    make = declaring_factory(lambda spec: built.append(spec) or BoxEnv(spec))
    assert type(make(SPEC)) is BoxEnv and built[-1] == SPEC  # no marker: unchanged
    variant = make(infeasible_spec(SPEC))
    assert isinstance(variant, DeclarableEnvironment) and variant.infeasible and built[-1] == SPEC
    offered = make(declare_offered_spec(SPEC))
    assert not offered.infeasible and built[-1] == SPEC and DECLARE_PARAM not in built[-1].params
    assert base_spec(infeasible_spec(declare_offered_spec(SPEC))) == SPEC
    assert is_infeasible_group(TaskRef(infeasible_spec(SPEC), 3).group_id) and not is_infeasible_group(TaskRef(SPEC, 3).group_id)
    assert TaskRef(declare_offered_spec(SPEC), 3).group_id == TaskRef(SPEC, 3).group_id

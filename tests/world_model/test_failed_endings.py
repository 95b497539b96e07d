"""Episodes that end lost in the world model: the last step of an episode the environment
ended without a win before its step limit is learnt as ``[task failed]`` (an episode cut at
the limit still gives no example), and a world model that answers it ends the episode lost;
imagined, the answer is only shown."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from hindsight.envs.base import EnvironmentSpec, ToyEnvironment
from hindsight.policy.generation import SamplingConfig
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.random_agent import run_random_agent
from hindsight.rollout.tasks import make_tasks
from hindsight.world_model.environment import IMAGINARY_LAYOUT, IMAGINE_PREFIX, RecordedTasks, WorldModelSimulator
from hindsight.world_model.transitions import FAILED_MARKER, SOLVED_MARKER, ended_lost, is_failed, transition_examples

SPEC = EnvironmentSpec("toy", "buttons", {}, max_steps=3)
VALID = ["press red", "press blue", "look"]


class ButtonsEnv(ToyEnvironment):
    """Press the blue button: blue wins, red ends the episode lost, look changes nothing."""

    def __init__(self, spec):
        self.spec = spec

    def reset(self, seed, split="train"):
        return f"Panel {seed}: a red and a blue button.", {"task": "Press the blue button.", "valid_actions": list(VALID)}

    def step(self, action):
        won, over = action == "press blue", action in ("press red", "press blue")
        return "The panel.", 10.0 if won else 0.0, over, False, {"valid_actions": list(VALID), "won": won}


def _episode(actions: list[str], *, won: bool, done: bool) -> pd.DataFrame:
    return pd.DataFrame({
        "episode_id": "e", "group_id": "toy/buttons/train/0", "task_type": "buttons", "source": "rollout", "task": "Press blue.",
        "step": range(len(actions)), "observation": [f"view {k}" for k in range(len(actions))], "action": actions,
        "won": [won and k == len(actions) - 1 for k in range(len(actions))], "reward": 0.0, "action_valid": True,
        "done": [done and k == len(actions) - 1 for k in range(len(actions))],
    })


def test_a_lost_ending_before_the_step_limit_is_learnt_as_failed():
    lost = _episode(["look", "press red"], won=False, done=True)
    examples = transition_examples(lost, history=1, max_chars=600, heldout_fraction=0.0, max_steps=3)
    assert examples["response"].tolist() == ["view 1", FAILED_MARKER] and examples["terminal"].tolist() == [False, True]
    assert ended_lost(lost, 3) and not ended_lost(lost, 2) and not ended_lost(lost, None)
    # the old reading, without a step limit: the lost ending gives no example
    assert transition_examples(lost, history=1, max_chars=600, heldout_fraction=0.0)["response"].tolist() == ["view 1"]
    cut = _episode(["look", "look", "look"], won=False, done=True)  # cut at the limit: what followed is unknown
    assert transition_examples(cut, history=1, max_chars=600, heldout_fraction=0.0, max_steps=3)["response"].tolist() == ["view 1", "view 2"]
    won = _episode(["look", "press blue"], won=True, done=True)
    assert transition_examples(won, history=1, max_chars=600, heldout_fraction=0.0, max_steps=3)["response"].iloc[-1] == SOLVED_MARKER


def test_random_episodes_give_failed_endings_the_expert_never_shows():
    table = run_random_agent(ButtonsEnv, make_tasks(SPEC, "train", range(12)), seed=3).table
    examples = transition_examples(table, history=1, max_chars=600, heldout_fraction=0.0, max_steps=SPEC.max_steps)
    outcomes = examples.loc[examples["terminal"], "response"]
    assert (outcomes == FAILED_MARKER).any() and (outcomes == SOLVED_MARKER).any()
    last = table.sort_values("step").groupby("episode_id").tail(1)
    lost_early = last[~last["won"] & last["done"] & (last["step"] < SPEC.max_steps - 1)]
    assert (outcomes == FAILED_MARKER).sum() == len(lost_early)


class AnsweringSimulator(WorldModelSimulator):
    """A world model that answers ``[task failed]`` to red and ``[task solved]`` to blue."""

    def predict(self, prompt: str) -> str:
        self.calls += 1
        action = prompt.rsplit("Action: ", 1)[1].splitlines()[0]
        return {"press red": FAILED_MARKER, "press blue": SOLVED_MARKER}.get(action, "The panel.")


@pytest.fixture(scope="module")
def simulator(tiny_policy):
    rollout = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=768), max_parallel=4, progress=False, group_size=1, seed=0)
    recorded = run_rollouts(tiny_policy, ButtonsEnv, make_tasks(SPEC, "train", [0]), dataclasses.replace(rollout))
    return AnsweringSimulator(tiny_policy, RecordedTasks(recorded.table))


def test_a_predicted_failure_ends_the_episode_lost(simulator):
    env = simulator.make_env(SPEC)
    env.reset(0, "train")
    observation, reward, terminated, truncated, info = env.step("press red")
    assert (terminated, truncated, info["won"], reward) == (True, False, False, 0.0)
    assert is_failed(observation) and info["valid_actions"] == []
    env.reset(0, "train")
    _, reward, terminated, _, info = env.step("press blue")
    assert terminated and info["won"] and reward == SPEC.reward.success_reward


def test_an_imagined_failure_is_shown_and_the_state_stays(simulator):
    env = simulator.make_env(SPEC, imaginary_turns=2)
    start, _ = env.reset(0, "train")
    shown, _, terminated, _, info = env.step(IMAGINE_PREFIX + "press red")
    assert shown == IMAGINARY_LAYOUT.format(FAILED_MARKER) and not terminated and info["imaginary"]
    assert env.observation == start and env.history == []

"""Every gold solver wins 20 of 20 train seeds of its MiniWoB++ task in a real Chromium (by
element ref), and most of them by clicking the elements' centres too; the environments share
one browser (a window each), and no browser process is left after the module."""

from __future__ import annotations

import pytest

from hindsight.envs import EnvironmentSpec, make_env
from hindsight.envs.miniwob.pool import browser_pool
from hindsight.envs.miniwob.solvers import SOLVERS, by_coordinates
from miniwob_checks import no_browser_left  # noqa: F401  (fixture)

SEEDS = 20
COORDINATE_SEEDS = 3
OVERLAPPING = {"click-button-sequence"}
"""Tasks whose buttons may overlap: a click at one's centre can land on the other."""


@pytest.fixture(scope="module")
def envs(no_browser_left):  # noqa: F811
    built = {task: make_env(EnvironmentSpec("miniwob", task, max_steps=8)) for task in SOLVERS}
    yield built
    for env in built.values():
        env.close()


def play(env, seed: int, split: str = "train", coordinates: bool = False) -> dict:
    env.reset(seed, split)
    actions = env.gold_actions()
    if coordinates:
        actions = by_coordinates(actions, env.state.elements)
        assert any(action.startswith("click ") and "[" not in action for action in actions)
    info = {}
    for step, action in enumerate(actions, start=1):
        _, reward, terminated, truncated, info = env.step(action)
        assert info["action_valid"], action
        assert terminated == (step == len(actions)), f"the episode ended at step {step} of {len(actions)}"
        assert not truncated
    assert reward == 10.0 and info["score"] == 1.0 and info["miniwob_reward"] > 0
    return info


@pytest.mark.parametrize("task", sorted(SOLVERS))
def test_the_gold_solver_wins_every_seed(envs, task):
    env = envs[task]
    wins = sum(play(env, seed)["won"] for seed in env.seeds("train", SEEDS))
    assert wins == SEEDS
    assert browser_pool().live_browsers == 1  # every task's window in one browser


@pytest.mark.parametrize("task", sorted(set(SOLVERS) - OVERLAPPING))
def test_the_gold_solver_wins_by_coordinates(envs, task):
    env = envs[task]
    for seed in env.seeds("dev", COORDINATE_SEEDS):
        assert play(env, seed, "dev", coordinates=True)["won"]

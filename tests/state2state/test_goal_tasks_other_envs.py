"""Exploration -> goal tasks -> goal environment on TextWorld and ScienceWorld (the
twc case in ``test_goal_tasks``): every goal's recorded path wins it on the real game."""

from __future__ import annotations

import pytest

from hindsight.envs import EnvironmentSpec, make_env
from hindsight.rollout.tasks import make_tasks
from hindsight.state2state.exploration import explore_states
from hindsight.state2state.goal_env import GoalEnvironmentFactory, goal_task_refs
from hindsight.state2state.task_set import build_task_set, check_task_set

pytestmark = pytest.mark.filterwarnings("ignore:Game .* is not fully supported")


def _replay_every_goal(spec: EnvironmentSpec, seeds: list[int], random_episodes: int) -> int:
    states = explore_states(make_tasks(spec, "train", seeds), make_env, random_episodes=random_episodes, seed=3)
    tasks = check_task_set(build_task_set(states, facts_per_goal=2, max_tasks=6, seed=0))
    refs = goal_task_refs(tasks, [spec])
    env = GoalEnvironmentFactory(tasks)(refs[0].spec)
    for ref, row in zip(refs, tasks.itertuples(index=False)):
        _, info = env.reset(ref.seed, ref.split)
        assert not info["won"] and info["task"].startswith("Your task is to reach a state where ")
        for action in row.path:
            _, reward, terminated, _, info = env.step(action)
        assert info["won"] and terminated and reward == spec.reward.success_reward, row.goal
    env.close()
    return len(tasks)


def test_textworld_goals_replay(tmp_path):
    spec = EnvironmentSpec(
        "textworld", "custom", {"world_size": 2, "nb_objects": 3, "quest_length": 2, "cache_dir": str(tmp_path)},
        max_steps=8,
    )
    assert _replay_every_goal(spec, [0], random_episodes=3) >= 2


def test_scienceworld_goals_replay():
    spec = EnvironmentSpec("scienceworld", "boil", {}, max_steps=4)
    seed = make_env(spec).seeds("train", 1)[0]
    assert _replay_every_goal(spec, [seed], random_episodes=1) >= 1

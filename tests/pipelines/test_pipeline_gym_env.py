"""A Gymnasium text environment defined in this file joins the project by its id alone:
registered with ``gymnasium.register``, selected with ``environment.env: gym`` and
``environment.games: [{game: test/FindKey-v0}]``, and trained through the default stages
up to ``training`` (ingestion plays its gold solver, behaviour cloning builds and trains
the tiny policy, then the skills stage, Stage 1 and two RL updates).

The game: two rooms, the key lies in one of them (task k: the kitchen when k is even, else
the garden); the agent starts in the hall and wins by taking the key.
"""

from __future__ import annotations

import gymnasium
import pandas as pd
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from hindsight.envs import EnvironmentSpec, make_env
from hindsight.envs.gym_wrapper import TEXT_CHARSET

from kedro_project import KedroProject

pytestmark = pytest.mark.pipeline

FIND_KEY = "test/FindKey-v0"
ROOMS = ("hall", "kitchen", "garden")


class FindKeyEnv(gymnasium.Env):
    """Find the key in one of two rooms and take it."""

    metadata = {"render_modes": []}

    def __init__(self, rooms: tuple[str, ...] = ROOMS) -> None:
        self.rooms = rooms
        self.observation_space = spaces.Text(200, min_length=0, charset=TEXT_CHARSET)
        self.action_space = spaces.Text(40, charset=TEXT_CHARSET)
        self.key_room = self.room = rooms[1]

    def _valid(self) -> list[str]:
        moves = [f"go to {room}" for room in self.rooms if room != self.room]
        return moves + (["take key"] if self.room == self.key_room else [])

    def _info(self, **extra) -> dict:
        return {"valid_actions": self._valid(), "task": "Your task is to take the key.", **extra}

    def _look(self) -> str:
        return f"You are in the {self.room}." + (" A key lies here." if self.room == self.key_room else "")

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        task = seed if seed is not None else int(self.np_random.integers(1000))
        self.key_room = self.rooms[1 + task % 2]
        self.room = self.rooms[0]
        return self._look(), self._info(gold_actions=[f"go to {self.key_room}", "take key"])

    def step(self, action):
        action = str(action).strip().lower()
        if action not in self._valid():
            return "Nothing happens.", 0.0, False, False, self._info(action_valid=False)
        if action == "take key":
            return "You take the key. You win!", 1.0, True, False, self._info(won=True)
        self.room = action.removeprefix("go to ")
        return self._look(), 0.0, False, False, self._info()


gymnasium.register(id=FIND_KEY, entry_point=FindKeyEnv)

RUNTIME_PARAMS = {
    "environment": {"env": "gym", "max_steps": 6, "games": [{"game": FIND_KEY, "params": {}}]},
    "ingestion": {"expert_episodes": {"train": 4, "dev": 0, "test": 0}},
    "skills": {"tasks_per_game": 1, "rollouts_per_task": 2, "validation": {"enabled": False}},
    "training": {"tasks_per_game": 2},
}


def test_the_test_game_is_a_valid_gymnasium_env():
    check_env(gymnasium.make(FIND_KEY).unwrapped)


def test_the_adapter_plays_it_as_a_project_environment():
    env = make_env(EnvironmentSpec("gym", FIND_KEY, {}, max_steps=5))
    observation, info = env.reset(env.seeds("train", 2)[1], "train")  # task 1: key in the garden
    assert observation == "You are in the hall." and info["task"] == "Your task is to take the key."
    assert info["valid_actions"] == ["go to kitchen", "go to garden"] and info["task_type"] == FIND_KEY
    assert env.gold_actions() == ["go to garden", "take key"]
    _, reward, terminated, truncated, info = env.step("dance")
    assert reward == pytest.approx(-0.1) and not info["action_valid"] and not terminated  # project's rule
    env.step("go to garden")
    _, reward, terminated, truncated, info = env.step("take key")
    assert reward == 10.0 and terminated and not truncated and info["won"] and info["env_reward"] == 1.0
    env.reset(0, "train")
    results = [env.step("go to garden") for _ in range(5)]  # no key there for task 0: wander
    assert [r[3] for r in results] == [False] * 4 + [True]  # truncated at max_steps
    env.close()


def test_an_unknown_id_names_the_setting():
    from hindsight.envs import EnvironmentConfigError

    with pytest.raises(EnvironmentConfigError, match="environment.games"):
        make_env(EnvironmentSpec("gym", "test/NoSuchGame-v0", {}))


@pytest.fixture(scope="module")
def gym_run(tmp_path_factory):
    project = KedroProject(tmp_path_factory.mktemp("gym_env_project"))
    stages = ["ingestion", "behaviour_cloning", "skills", "stage1", "training"]
    return project.run(pipeline_names=stages, runtime_params=RUNTIME_PARAMS)


def test_the_pipeline_trains_on_the_gym_env_by_id(gym_run):
    trajectories = pd.read_parquet(gym_run.outputs["03_primary/trajectories.parquet"])
    assert set(trajectories["env"]) == {"gym"} and set(trajectories["task_type"]) == {FIND_KEY}
    assert trajectories.groupby("episode_id")["won"].any().all()  # the gold solver won every task
    history = pd.read_parquet(gym_run.outputs["07_model_output/training_history.parquet"])
    assert history["update"].tolist() == [1, 2]
    assert history["losses/ppo"].notna().all()
    last = pd.read_parquet(gym_run.outputs["07_model_output/training_last_rollout.parquet"])
    assert set(last["group_id"].str.split("/").str[0]) == {"gym"}
    assert last["action"].isin(["go to kitchen", "go to garden", "take key"]).all()  # constrained to the env's list

"""ScienceWorld adapter, on the real simulator (one shared JVM for the module)."""

import os
import random
import signal

import pytest
from scienceworld.constants import JAR_PATH

from hindsight.envs import EnvironmentConfigError, EnvironmentCrashedError, EnvironmentSpec, make_env
from hindsight.envs.java_backend import JavaBackend
from hindsight.envs.scienceworld import ScienceWorldEnvironment, ambiguous_options, is_invalid_action_reply

from episodes import play

FIND_ANIMAL = EnvironmentSpec("scienceworld", "find-animal", {"simplification": "easy"}, max_steps=100)


@pytest.fixture(scope="module")
def find_animal():
    env = make_env(FIND_ANIMAL)
    yield env
    env.close()


def test_gold_sequence_wins(find_animal):
    for split in ("train", "test"):
        seed = find_animal.seeds(split, 1)[0]
        observation, info = find_animal.reset(seed, split)
        assert "hallway" in observation or "This room is called" in observation
        assert info["task"].startswith("Your task is to find a(n) animal")
        assert info["task_type"] == "find-animal" and not info["won"]
        assert "focus on" in " ".join(info["valid_actions"])
        observation, reward, terminated, truncated, info = play(find_animal, find_animal.gold_actions())[-1]
        assert info["won"] and terminated and not truncated
        assert reward == 10.0 and info["score"] == 1.0


def test_gold_sequence_with_an_ambiguous_request_wins():
    env = make_env(EnvironmentSpec("scienceworld", "grow-plant", {}, max_steps=100))
    env.reset(env.seeds("train", 1)[0], "train")
    results = play(env, env.gold_actions())
    ambiguous = [result for result in results if result[0].startswith("Ambiguous request")]
    assert ambiguous, "grow-plant variation 0's gold path asks to disambiguate"
    assert all(result[4]["valid_actions"] == ambiguous_options(result[0]) for result in ambiguous)
    assert ambiguous[0][4]["valid_actions"][0] == "0"
    assert results[-1][4]["won"] and results[-1][2]
    env.close()


def test_random_valid_actions_do_not_crash(find_animal):
    rng = random.Random(1)
    seed = find_animal.seeds("train", 1, offset=3)[0]
    observation, info = find_animal.reset(seed, "train")
    for _ in range(50):
        observation, reward, terminated, truncated, info = find_animal.step(rng.choice(info["valid_actions"]))
        assert 0.0 <= info["score"] <= 1.0 and isinstance(observation, str)
        if terminated or truncated:
            observation, info = find_animal.reset(seed, "train")


def test_invalid_action_comes_back_invalid(find_animal):
    observation, info = find_animal.reset(find_animal.seeds("dev", 1)[0], "dev")
    text, reward, terminated, truncated, after = find_animal.step("fly to the moon")
    assert is_invalid_action_reply(text)
    assert after["action_valid"] is False and reward == pytest.approx(-0.1)
    assert after["anchor_observation"] == info["anchor_observation"] == observation
    assert not terminated and not truncated


def test_splits_are_disjoint_and_enforced(find_animal):
    train, dev, test = (set(find_animal.seeds(split, 5)) for split in ("train", "dev", "test"))
    assert not (train & dev) and not (train & test) and not (dev & test)
    with pytest.raises(EnvironmentConfigError, match="is not in its dev split"):
        find_animal.reset(find_animal.seeds("train", 1)[0], "dev")
    with pytest.raises(EnvironmentConfigError, match="has variations 0-299; got 5000"):
        find_animal.reset(5000, "train")


def test_task_ids_resolve_to_names():
    env = make_env(EnvironmentSpec("scienceworld", "1-1", {}))
    assert env.task_name == "boil"
    env.close()


def test_killed_jvm_raises_crash_error_and_restart_recovers(wait_until_dead):
    backend = JavaBackend(JAR_PATH, "ScienceWorld")
    env = ScienceWorldEnvironment(FIND_ANIMAL, backend=backend)
    try:
        seed = env.seeds("train", 1)[0]
        env.reset(seed, "train")
        old_pid = backend.pid
        os.kill(old_pid, signal.SIGKILL)
        wait_until_dead(backend)
        with pytest.raises(EnvironmentCrashedError, match="ScienceWorld JVM .* is no longer running"):
            env.step("look around")
        env.restart()
        assert backend.pid != old_pid
        env.reset(seed, "train")
        assert play(env, env.gold_actions())[-1][4]["won"]
    finally:
        backend.close()

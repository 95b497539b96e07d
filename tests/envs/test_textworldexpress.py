"""TextWorldExpress adapter, on the real simulator (one shared JVM for the module)."""

import os
import random
import signal

import pytest
from textworld_express.constants import JAR_PATH

from hindsight.envs import EnvironmentConfigError, EnvironmentCrashedError, EnvironmentSpec, make_env
from hindsight.envs.java_backend import JavaBackend
from hindsight.envs.textworldexpress import (
    GAME_PARAMETERS,
    INVALID_ACTION_OBSERVATION,
    TextWorldExpressEnvironment,
)

from episodes import play

TWC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2}, max_steps=30)
COOKING = EnvironmentSpec(
    "textworldexpress",
    "cookingworld",
    {"numLocations": 1, "numIngredients": 2, "numDistractorItems": 2, "includeDoors": 0},
    max_steps=30,
)
INFO_KEYS = {"task", "task_type", "valid_actions", "anchor_observation", "won", "action_valid", "score", "inventory"}


@pytest.fixture(scope="module")
def twc():
    env = make_env(TWC)
    yield env
    env.close()


@pytest.fixture(scope="module")
def cooking():
    env = make_env(COOKING)
    yield env
    env.close()


@pytest.mark.parametrize("split", ["train", "dev", "test"])
@pytest.mark.parametrize("env_name", ["twc", "cooking"])
def test_gold_sequence_wins(env_name, split, request):
    env = request.getfixturevalue(env_name)
    for seed in env.seeds(split, 3):
        observation, info = env.reset(seed, split)
        assert observation and INFO_KEYS <= set(info)
        assert info["action_valid"] and not info["won"] and info["task_type"] == env.spec.game
        results = play(env, env.gold_actions())
        observation, reward, terminated, truncated, info = results[-1]
        assert info["won"] and terminated and not truncated
        assert reward == 10.0
        assert info["score"] == pytest.approx(1.0)
        assert all(result[1] == 0.0 for result in results[:-1])


def test_random_valid_actions_do_not_crash(twc, cooking):
    rng = random.Random(0)
    for env in (twc, cooking):
        seed = env.seeds("train", 1, offset=5)[0]
        observation, info = env.reset(seed, "train")
        for _ in range(50):
            observation, reward, terminated, truncated, info = env.step(rng.choice(info["valid_actions"]))
            assert info["action_valid"] and INFO_KEYS <= set(info)
            assert isinstance(observation, str) and observation
            if terminated or truncated:
                observation, info = env.reset(seed, "train")


def test_invalid_action_is_a_no_op(twc):
    observation, info = twc.reset(twc.seeds("train", 1)[0], "train")
    result = twc.step("fly to the moon")
    after_observation, reward, terminated, truncated, after = result
    assert after_observation == INVALID_ACTION_OBSERVATION
    assert after["action_valid"] is False
    assert reward == pytest.approx(-0.1)
    assert not terminated and not truncated
    assert after["valid_actions"] == info["valid_actions"]
    assert after["anchor_observation"] == info["anchor_observation"] == observation
    # case and spacing do not make an action invalid; the state then changes
    _, _, _, _, taken = twc.step("  TAKE " + info["valid_actions"][-1].split(" ", 1)[1].upper())
    assert taken["action_valid"] is True
    assert taken["anchor_observation"] != observation


def test_max_steps_truncates_and_stepping_after_the_end_raises():
    env = make_env(EnvironmentSpec("textworldexpress", "twc", dict(TWC.params), max_steps=3))
    env.reset(env.seeds("train", 1)[0], "train")
    assert [env.step("look around")[3] for _ in range(3)] == [False, False, True]
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step("look around")
    env.close()


@pytest.mark.parametrize("game", sorted(GAME_PARAMETERS))
def test_every_shipped_game_loads_and_its_gold_path_wins(game):
    env = make_env(EnvironmentSpec("textworldexpress", game, {}, max_steps=200))
    seed = env.seeds("dev", 1)[0]
    env.reset(seed, "dev")
    *_, info = play(env, env.gold_actions())[-1]
    assert info["won"], game
    env.close()


def test_seed_folds_are_disjoint_and_enforced(twc):
    folds = {split: set(twc.seeds(split, 1000)) for split in ("train", "dev", "test")}
    assert not folds["train"] & folds["dev"]
    assert not folds["train"] & folds["test"]
    assert not folds["dev"] & folds["test"]
    assert twc.seeds("train", 3, offset=10) == [10, 11, 12]
    with pytest.raises(EnvironmentConfigError, match="not a test seed"):
        twc.reset(twc.seeds("train", 1)[0], "test")
    with pytest.raises(EnvironmentConfigError, match="has 1000 dev seeds; asked for 5 from offset 998"):
        twc.seeds("dev", 5, offset=998)


def test_killed_jvm_raises_crash_error_and_restart_recovers(wait_until_dead):
    backend = JavaBackend(JAR_PATH, "TextWorldExpress")
    first = TextWorldExpressEnvironment(TWC, backend=backend)
    second = TextWorldExpressEnvironment(COOKING, backend=backend)
    try:
        first.reset(first.seeds("train", 1)[0], "train")
        second.reset(second.seeds("train", 1)[0], "train")
        old_pid = backend.pid
        os.kill(old_pid, signal.SIGKILL)
        wait_until_dead(backend)
        with pytest.raises(EnvironmentCrashedError, match="no longer running"):
            first.step("look around")
        first.restart()
        assert backend.is_alive and backend.pid != old_pid
        with pytest.raises(EnvironmentCrashedError, match="replaced by a new one"):
            second.reset(second.seeds("train", 1)[0], "train")
        second.restart()
        for env in (first, second):
            env.reset(env.seeds("train", 1)[0], "train")
            assert play(env, env.gold_actions())[-1][4]["won"]
        assert backend.pid != old_pid  # both run on the one new JVM
    finally:
        backend.close()


def _gold_in_child(queue):
    env = make_env(TWC)
    env.reset(env.seeds("train", 1)[0], "train")
    queue.put((play(env, env.gold_actions())[-1][4]["won"], env.backend.pid))
    env.close()


def test_forked_worker_gets_its_own_jvm(twc):
    import multiprocessing

    twc.reset(twc.seeds("train", 1)[0], "train")
    parent_pid = twc.backend.pid
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    worker = context.Process(target=_gold_in_child, args=(queue,))
    worker.start()
    won, child_jvm = queue.get(timeout=60)
    worker.join(timeout=60)
    assert won and child_jvm != parent_pid
    assert twc.backend.pid == parent_pid and twc.backend.is_alive
    assert play(twc, twc.gold_actions())[-1][4]["won"]


def test_a_failing_java_call_becomes_a_crash_error():
    backend = JavaBackend(JAR_PATH, "TextWorldExpress")
    try:
        interface, generation = backend.new_object("textworldexpress.runtime.PythonInterface")
        with pytest.raises(EnvironmentCrashedError, match=r"backend failed during a call \(Py4J"):
            backend.call(generation, interface.generateNewGameJSON, "not a seed")
        assert backend.is_alive
    finally:
        backend.close()
    assert not backend.is_alive


def test_a_games_folds_are_fetched_from_the_jvm_once_per_process(twc):
    """Every environment made for a rollout shares the folds the first one fetched: a second
    environment of the same game never asks the JVM for them (it would fail here), and a
    game with other parameters does."""
    seeds = twc.seeds("train", 5)
    other = make_env(TWC)
    try:
        other._call_list = lambda *args: pytest.fail("the fold was fetched again")
        assert other.seeds("train", 5) == seeds
        observation, _ = other.reset(seeds[0], "train")
        assert observation
        with pytest.raises(EnvironmentConfigError, match="not a train seed"):
            other.reset(-1, "train")
    finally:
        other.close()
    cooking = make_env(COOKING)
    try:
        assert cooking.fold_size("train") > 0  # another game's folds are its own fetch
    finally:
        cooking.close()

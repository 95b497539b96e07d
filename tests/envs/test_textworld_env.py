"""TextWorld adapter: one tiny game generated per test module into a temporary cache."""

import random

import pytest

from hindsight.envs import EnvironmentConfigError, EnvironmentCrashedError, EnvironmentSpec, make_env
from hindsight.envs.textworld_env import INVALID_ACTION_OBSERVATION, clean_feedback
from hindsight.envs.textworld_games import game_folder, game_settings

from episodes import play

# TextWorld games are "not fully supported" by Jericho by design (TextWorld tracks score and
# moves itself); TextWorld silences that warning at import, pytest re-enables it per test.
pytestmark = pytest.mark.filterwarnings("ignore:Game .* is not fully supported")

TINY = {"world_size": 1, "nb_objects": 3, "quest_length": 2}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("textworld_games")


@pytest.fixture(scope="module")
def tiny(cache_dir):
    env = make_env(EnvironmentSpec("textworld", "custom", {**TINY, "cache_dir": str(cache_dir)}, max_steps=30))
    env.reset(env.seeds("train", 1)[0], "train")  # generates the one game of the module
    yield env
    env.close()


def test_gold_sequence_wins(tiny):
    observation, info = tiny.reset(0, "train")
    assert observation.startswith("-=") and info["task"] and info["valid_actions"]
    assert "look" in info["valid_actions"] and not info["won"]
    gold = tiny.gold_actions()
    assert len(gold) >= 1
    observation, reward, terminated, truncated, info = play(tiny, gold)[-1]
    assert info["won"] and terminated and not truncated
    assert reward == 10.0 and info["score"] == 1.0


def test_game_is_cached_with_its_settings(tiny, cache_dir):
    folder = game_folder(cache_dir, "custom", game_settings("custom", TINY))
    assert sorted(path.name for path in folder.iterdir()) == ["settings.json", "train_0.json", "train_0.z8"]
    modified = (folder / "train_0.z8").stat().st_mtime_ns
    other = make_env(EnvironmentSpec("textworld", "custom", {**TINY, "cache_dir": str(cache_dir)}))
    other.reset(0, "train")
    assert (folder / "train_0.z8").stat().st_mtime_ns == modified
    tiny.reset(0, "train")
    assert other.gold_actions() == tiny.gold_actions()
    other.close()


def test_random_valid_actions_do_not_crash(tiny):
    rng = random.Random(2)
    observation, info = tiny.reset(0, "train")
    for _ in range(50):
        observation, reward, terminated, truncated, info = tiny.step(rng.choice(info["valid_actions"]))
        assert info["action_valid"] and isinstance(observation, str) and ">" not in observation.splitlines()[-1:]
        if terminated or truncated:
            observation, info = tiny.reset(0, "train")


def test_invalid_action_is_a_no_op(tiny):
    observation, info = tiny.reset(0, "train")
    text, reward, terminated, truncated, after = tiny.step("xyzzy")
    assert text == INVALID_ACTION_OBSERVATION
    assert after["action_valid"] is False and reward == pytest.approx(-0.1)
    assert after["anchor_observation"] == observation and after["valid_actions"] == info["valid_actions"]


def test_closed_engine_raises_crash_error_and_restart_recovers(tiny):
    tiny.reset(0, "train")
    tiny.backend.close()  # the engine runs in-process: releasing it is the closest thing to a kill
    with pytest.raises(EnvironmentCrashedError, match="TextWorld engine failed"):
        tiny.step("look")
    tiny.restart()
    tiny.reset(0, "train")
    assert play(tiny, tiny.gold_actions())[-1][4]["won"]


def test_splits_are_disjoint_seed_ranges(tiny):
    assert tiny.seeds("train", 2) == [0, 1]
    assert tiny.seeds("dev", 2, offset=1) == [1_000_001, 1_000_002]
    assert tiny.seeds("test", 1) == [2_000_000]
    with pytest.raises(EnvironmentConfigError, match=r"Seed 5 is not a TextWorld test seed \(test seeds are 2000000-2999999"):
        tiny.reset(5, "test")


def test_challenge_settings_follow_the_split():
    from hindsight.envs.textworld_games import settings_for_split

    cooking = game_settings("tw-cooking", {"recipe": 1})
    assert settings_for_split("tw-cooking", cooking, "dev")["split"] == "valid"
    simple = game_settings("tw-simple", {})
    assert settings_for_split("tw-simple", simple, "test")["test"] is True
    assert settings_for_split("tw-simple", simple, "train")["test"] is False


def test_clean_feedback_drops_prompt_and_status_line():
    raw = "\nYou pick up the key.\n\n\n\n   Your score went up.\n\n>    -= Shower =-1/2"
    assert clean_feedback(raw) == "You pick up the key.\n\nYour score went up."

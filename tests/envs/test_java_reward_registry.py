"""Java check, step reward, action matching, the environment registry, and the
configuration errors of every environment family (each names the bad game or parameter)."""

import pytest

from hindsight.envs import (
    SUPPORTED_ENVS,
    EnvironmentConfigError,
    EnvironmentSpec,
    RewardConfig,
    check_java,
    make_env,
    spec_from_params,
    step_reward,
)
from hindsight.envs.valid_actions import match_valid_action, normalize_action
from hindsight.envs.java import parse_java_major


@pytest.mark.parametrize(
    "output, major",
    [
        ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', 17),
        ('java version "1.8.0_292"\nJava(TM) SE Runtime Environment', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "11.0.2+9"', 11),
        ("bash: java: command not found", None),
    ],
)
def test_parse_java_major(output, major):
    assert parse_java_major(output) == major


def test_check_java_finds_the_installed_runtime():
    assert check_java(17) >= 17


def test_check_java_explains_a_missing_runtime():
    with pytest.raises(EnvironmentConfigError) as error:
        check_java(17, java_executable="/nonexistent/bin/java")
    message = str(error.value)
    assert "No Java runtime found" in message
    assert "apt-get install openjdk-17-jre-headless" in message


def test_check_java_explains_a_too_old_runtime():
    with pytest.raises(EnvironmentConfigError, match=r"Java 99\+ is needed.*openjdk-99-jre-headless"):
        check_java(99)


def test_step_reward_follows_the_contract():
    config = RewardConfig()
    assert (config.success_reward, config.invalid_penalty) == (10.0, 0.1)
    assert step_reward(True, True, config) == 10.0
    assert step_reward(False, True, config) == 0.0
    assert step_reward(False, False, config) == pytest.approx(-0.1)
    assert step_reward(True, False, RewardConfig(success_reward=1.0, invalid_penalty=0.5)) == 0.5


def test_match_valid_action_ignores_case_and_spaces_only():
    valid = ["take clean blue T-shirt", "look around"]
    assert match_valid_action("  TAKE clean   blue t-shirt ", valid) == "take clean blue T-shirt"
    assert match_valid_action("take blue T-shirt", valid) is None
    assert match_valid_action("", valid) is None
    assert normalize_action(" Look\tAround ") == "look around"


def test_registry_lists_families_and_rejects_unknown_ones():
    assert set(SUPPORTED_ENVS) == {"textworldexpress", "scienceworld", "textworld", "alfworld", "dual_control", "miniwob", "gym"}
    with pytest.raises(EnvironmentConfigError, match="Unknown environment family 'nethack'"):
        make_env(EnvironmentSpec("nethack", "dungeon"))
    with pytest.raises(EnvironmentConfigError, match="max_steps must be a positive integer"):
        make_env(EnvironmentSpec("textworldexpress", "twc", max_steps=0))


def test_spec_from_params():
    spec = spec_from_params({"env": "textworldexpress", "game": "twc", "params": {"numLocations": 1}, "max_steps": 20})
    assert spec == EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1}, 20)
    assert spec.step_timeout_s == 60.0
    assert spec_from_params({"env": "textworldexpress", "game": "twc", "step_timeout_s": None}).step_timeout_s is None
    with pytest.raises(EnvironmentConfigError, match=r"missing \['game'\].*unknown \['gmae'\]"):
        spec_from_params({"env": "textworldexpress", "gmae": "twc"})


@pytest.mark.parametrize(
    "env, game, params, expected",
    [
        ("textworldexpress", "zork", {}, r"Unknown TextWorldExpress game 'zork'"),
        ("textworldexpress", "twc", {"numRooms": 2}, r"Unknown parameter\(s\) \['numRooms'\] for TextWorldExpress game 'twc'"),
        ("textworldexpress", "twc", {"numLocations": "2"}, r"parameter 'numLocations' must be an integer, got '2'"),
        ("textworldexpress", "twc", {"numLocations": 99}, r"rejected game 'twc' with parameters \{'numLocations': 99\}: Number of locations"),
        ("scienceworld", "make-coffee", {}, r"Unknown ScienceWorld task 'make-coffee'"),
        ("scienceworld", "boil", {"simplification": "veryEasy"}, r"Unknown ScienceWorld simplification\(s\) \['veryEasy'\]"),
        ("scienceworld", "boil", {"difficulty": 1}, r"Unknown parameter\(s\) \['difficulty'\] for ScienceWorld task 'boil'"),
        ("scienceworld", "power-component", {"simplification": "noElectricalAction"}, r"needs electrical actions"),
        ("textworld", "dungeon", {}, r"Unknown TextWorld game type 'dungeon'"),
        ("textworld", "custom", {"rooms": 2}, r"Unknown parameter\(s\) \['rooms'\] for TextWorld custom games"),
        ("textworld", "custom", {"world_size": 0}, r"parameter 'world_size' must be an integer >= 1, got 0"),
        ("textworld", "tw-simple", {"rewards": "lots"}, r"parameter 'rewards' must be one of \['dense', 'balanced', 'sparse'\]"),
        ("textworld", "tw-cooking", {"go": 5}, r"parameter 'go' must be one of \[1, 6, 9, 12\], got 5"),
        ("textworld", "tw-coin_collector", {"level": "easy"}, r"parameter 'level' must be an integer"),
        # checked before ALFWorld's package and game files are looked for
        ("alfworld", "make_coffee", {}, r"Unknown ALFWorld task type 'make_coffee'"),
        ("alfworld", "all", {"level": 2}, r"Unknown ALFWorld parameter\(s\) \['level'\]"),
    ],
)
def test_bad_game_or_parameters_raise_config_errors(env, game, params, expected):
    with pytest.raises(EnvironmentConfigError, match=expected):
        make_env(EnvironmentSpec(env, game, params))

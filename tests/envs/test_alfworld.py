"""ALFWorld adapter: where the package or its games are missing it says exactly what to do."""

import importlib.util

import pytest

from hindsight.envs import EnvironmentConfigError, EnvironmentSpec, make_env
from hindsight.envs.alfworld import alfworld_data_dir, split_task

ALFWORLD_INSTALLED = importlib.util.find_spec("alfworld") is not None


@pytest.mark.skipif(ALFWORLD_INSTALLED, reason="the alfworld package is installed here")
def test_missing_package_is_named_with_install_steps():
    with pytest.raises(EnvironmentConfigError) as error:
        make_env(EnvironmentSpec("alfworld", "pick_and_place_simple"))
    message = str(error.value)
    assert "package `alfworld` is not installed" in message
    assert "pip install alfworld" in message and "alfworld-download" in message


@pytest.mark.skipif(not ALFWORLD_INSTALLED, reason="needs the alfworld package")
def test_missing_game_files_are_named(tmp_path):
    with pytest.raises(EnvironmentConfigError, match=r"game files are missing: no train, valid_seen, valid_unseen"):
        make_env(EnvironmentSpec("alfworld", "all", {"data_dir": str(tmp_path)}))


def test_data_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    assert alfworld_data_dir({}) == tmp_path
    assert alfworld_data_dir({"data_dir": "/elsewhere"}).as_posix() == "/elsewhere"


def test_split_task_separates_task_and_room():
    feedback = (
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. You see a fridge 1.\n\n"
        "Your task is to: put a cool egg in microwave."
    )
    task, observation = split_task(feedback)
    assert task == "put a cool egg in microwave."
    assert observation == "You are in the middle of a room. You see a fridge 1."

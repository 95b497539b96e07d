"""Filmstrips of evaluation episodes (``hindsight.evaluation.filmstrip``) on a toy form that
renders its page: one frame per step, replayed on a fresh environment, with the action
drawn on it; none (and no environment built) for a text game; and the evaluation node's
MLflow artifacts in a real MLflow run."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from hindsight.config import EvaluationConfig, ProjectConfig
from hindsight.data.expert import play_gold_episode
from hindsight.envs import make_env, registry
from hindsight.envs.base import EnvironmentSpec
from hindsight.evaluation.filmstrip import (
    CLICK_COLOUR,
    GAP,
    SCALE,
    TYPE_COLOUR,
    Frame,
    chosen_episodes,
    draw_action,
    filmstrip,
    renders_screen,
    replay_frames,
    write_filmstrips,
)
from hindsight.params import build
from hindsight.pipelines.evaluation.nodes import log_filmstrips

from toy_screens import HEIGHT, SPEC, WIDTH, FormScreen


class Scripted(FormScreen):
    """The form played with ``ACTIONS`` instead of its gold path."""

    ACTIONS: tuple[str, ...] = ()

    def gold_actions(self):
        return list(self.ACTIONS) or super().gold_actions()


def episode(agent: str, seed: int, actions: tuple[str, ...] = ()) -> pd.DataFrame:
    env = Scripted()
    env.ACTIONS = actions
    rows = pd.DataFrame(play_gold_episode(env, SPEC, "train", seed))
    return rows.assign(agent=agent, episode_id=agent + ":" + rows["episode_id"] + f"/{len(actions)}")


@pytest.fixture()
def episodes() -> pd.DataFrame:
    """Two agents: "gold" wins twice; "clicker" loses once (Cancel after a click by
    coordinates and a key) and wins once."""
    return pd.concat(
        [
            episode("gold", 0), episode("gold", 1),
            episode("clicker", 2, ("click 20 100", "press Tab", "click [5]")),
            episode("clicker", 3, ('type [3] "cloud"', "click [4]")),
        ],
        ignore_index=True,
    )


@pytest.fixture()
def toy_family(monkeypatch):
    monkeypatch.setitem(registry.ENV_FAMILIES, "toy_screens", ("toy_screens", "FormScreen"))


def test_a_replay_gives_one_frame_per_step_with_the_screen_acted_on(episodes):
    rows = episodes[episodes["episode_id"].str.startswith("clicker") & (episodes["seed"] == 2)]
    frames = replay_frames(FormScreen(), rows)
    assert [frame.action for frame in frames] == ["click 20 100", "press Tab", "click [5]"]
    fresh = FormScreen()
    fresh.reset(2)
    np.testing.assert_array_equal(frames[0].screen, fresh.screenshot())
    assert not any(frame.diverged for frame in frames)


def test_a_replay_that_sees_another_page_is_marked_from_that_step(episodes):
    rows = episodes[episodes["episode_id"].str.startswith("gold") & (episodes["seed"] == 0)].copy()
    rows.loc[rows["step"] == 1, "anchor_observation"] = "a page the replay does not show"
    assert [frame.diverged for frame in replay_frames(FormScreen(), rows)] == [False, True]


def pixel(image: Image.Image, x: int, y: int) -> tuple[int, int, int]:
    return image.getpixel((x, y))[:3]


def test_the_action_is_drawn_on_its_screen():
    env = FormScreen()
    view, _ = env.reset(0)
    screen = env.screenshot()
    clicked = draw_action(Frame(screen, "click [4]", view))
    assert clicked.size == (WIDTH * SCALE, HEIGHT * SCALE)
    assert pixel(clicked, 10 * SCALE, 100 * SCALE) == CLICK_COLOUR  # the Submit box's left edge
    assert pixel(clicked, 80 * SCALE, 100 * SCALE) != CLICK_COLOUR  # Cancel's is not drawn
    typed = draw_action(Frame(screen, 'type [3] "apple"', view))
    assert pixel(typed, 10 * SCALE, 65 * SCALE) == TYPE_COLOUR
    point = draw_action(Frame(screen, "click 40 150", view))
    assert pixel(point, 40 * SCALE, 150 * SCALE) == CLICK_COLOUR  # the cross-hair's centre
    plain = draw_action(Frame(screen, "press Tab", view))
    assert pixel(plain, 40 * SCALE, 150 * SCALE) == (255, 255, 255) and pixel(plain, 10, plain.height - 15) != (255, 255, 255)


def test_a_strip_has_one_frame_per_step():
    env = FormScreen()
    view, _ = env.reset(1)
    frames = [Frame(env.screenshot(), action, view) for action in ("click [3]", "press Enter", "click [4]")]
    strip = filmstrip(frames, "three steps")
    assert strip.width == GAP + 3 * (WIDTH * SCALE + GAP)
    with pytest.raises(ValueError):
        filmstrip([], "none")


def test_episodes_are_chosen_per_agent_successes_and_failures_alternating(episodes):
    chosen = chosen_episodes(episodes, 2)
    assert set(chosen) == {"gold", "clicker"}
    assert [episode_id.split("/")[-3] for episode_id in chosen["clicker"]] == ["3", "2"]  # a success (seed 3), then a failure
    assert len(chosen["gold"]) == 2 and len(chosen_episodes(episodes, 1)["gold"]) == 1


def test_filmstrips_are_written_per_agent_with_a_frame_per_step(episodes, tmp_path, toy_family):
    paths = write_filmstrips(episodes, [SPEC], make_env, 2, tmp_path)
    assert sorted(path.relative_to(tmp_path).parts[0] for path in paths) == ["clicker", "clicker", "gold", "gold"]
    for path in paths:
        agent_rows = episodes[episodes["episode_id"].str.replace(r"[^A-Za-z0-9_.-]+", "_", regex=True) == path.stem]
        with Image.open(path) as strip:
            assert strip.width == GAP + len(agent_rows) * (WIDTH * SCALE + GAP), path.name


def test_a_text_game_gets_no_filmstrip_and_no_environment(episodes, tmp_path, monkeypatch):
    monkeypatch.setitem(registry.ENV_FAMILIES, "toy_screens", ("hindsight.envs.base", "ToyEnvironment"))  # renders no screen

    def no_env(spec):
        raise AssertionError("no environment should be built for a text game")

    assert not renders_screen(SPEC)
    assert write_filmstrips(episodes, [SPEC], no_env, 2, tmp_path) == []
    assert not renders_screen(EnvironmentSpec("textworldexpress", "twc"))


def test_the_evaluation_node_logs_the_strips_to_mlflow(episodes, tmp_path, toy_family):
    project = build(ProjectConfig, {"environment": {"env": "toy_screens", "games": [{"game": "enter-word"}], "max_steps": 4}})
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        experiment = mlflow.create_experiment("filmstrips", artifact_location=(tmp_path / "artifacts").as_uri())
        with mlflow.start_run(experiment_id=experiment) as run:
            log_filmstrips(episodes, project, EvaluationConfig(filmstrips=1))
        client = mlflow.MlflowClient()
        logged = {
            artifact.path
            for agent in ("gold", "clicker")
            for artifact in client.list_artifacts(run.info.run_id, f"filmstrips/{agent}")
        }
        assert len(logged) == 2 and all(path.endswith(".png") for path in logged)
        with mlflow.start_run(experiment_id=experiment) as none_run:
            log_filmstrips(episodes, project, EvaluationConfig(filmstrips=0))
        assert client.list_artifacts(none_run.info.run_id) == []
    finally:
        mlflow.set_tracking_uri(previous)

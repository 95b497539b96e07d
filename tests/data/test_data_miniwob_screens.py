"""Screens as data on real MiniWoB++ pages (Chromium): the gold episodes' screenshots, a
filmstrip replay that sees the same pages, and a GUI trajectory file recorded from the
environment's own element list that reads back as the environment's own view. No browser
process is left after the module (counted by pid).

Not in the unit tier: it starts Chromium (about 16 s), as the other MiniWoB++ tests of
tests/envs/ do; the default tier runs it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hindsight.data.expert import collect_expert_episodes
from hindsight.data.gui_trajectories import load_gui_trajectories
from hindsight.data.screenshots import screenshot_of
from hindsight.envs import EnvironmentSpec, make_env
from hindsight.evaluation.filmstrip import GAP, SCALE, replay_frames, write_filmstrips

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "envs"))
from miniwob_checks import no_browser_left  # noqa: E402, F401  (fixture)

SPECS = [EnvironmentSpec("miniwob", "enter-text", max_steps=4), EnvironmentSpec("miniwob", "click-checkboxes", max_steps=8)]


@pytest.fixture(scope="module")
def gold(no_browser_left):  # noqa: F811
    return collect_expert_episodes(SPECS, {"train": 2})


def test_every_gold_step_has_its_screen(gold):
    table, screenshots = gold
    assert table.groupby("episode_id")["won"].any().all()
    assert list(zip(screenshots["episode_id"], screenshots["step"])) == list(zip(table["episode_id"], table["step"]))
    assert set(zip(screenshots["width"], screenshots["height"])) == {(160, 210)}
    episode = table[table["task_type"] == "enter-text"]["episode_id"].iloc[0]
    before, after = screenshot_of(screenshots, episode, 0), screenshot_of(screenshots, episode, 1)
    assert (before != 255).any() and not np.array_equal(before, after)  # a page, and the typed text shows


def test_a_replay_sees_the_pages_the_episode_saw(gold, tmp_path):
    table, screenshots = gold
    episodes = table.assign(agent="gold")
    env = make_env(SPECS[1])
    try:
        for episode_id, rows in episodes[episodes["task_type"] == "click-checkboxes"].groupby("episode_id"):
            frames = replay_frames(env, rows)
            assert len(frames) == len(rows) and not any(frame.diverged for frame in frames)
            for step, frame in enumerate(frames):
                np.testing.assert_array_equal(frame.screen, screenshot_of(screenshots, episode_id, step))
    finally:
        env.close()
    paths = write_filmstrips(episodes, SPECS, make_env, 1, tmp_path)
    assert len(paths) == 1
    steps = len(episodes[episodes["episode_id"].str.replace(r"[^A-Za-z0-9_.-]+", "_", regex=True) == paths[0].stem])
    with Image.open(paths[0]) as strip:
        assert strip.width == GAP + steps * (160 * SCALE + GAP)


@pytest.mark.parametrize("game", ["enter-text", "click-checkboxes", "click-dialog", "login-user"])
def test_a_recorded_page_reads_back_as_the_environment_shows_it(game, tmp_path, no_browser_left):  # noqa: F811
    """The page's element tree written as a GUI file gives the environment's own view and
    valid actions, step by step, and its gold actions back."""
    env = make_env(EnvironmentSpec("miniwob", game, max_steps=8))
    try:
        views, valid, steps = [], [], []
        view, info = env.reset(env.seeds("train", 1)[0], "train")
        gold = env.gold_actions()
        for index, action in enumerate(gold):
            Image.fromarray(env.screenshot()).save(tmp_path / f"{index}.png")
            elements = [  # the page's tree, as a recorder of MiniWoB++ pages writes it
                {"ref": e.ref, "parent": e.parent, "tag": e.tag, "text": e.text, "box": [e.left, e.top, e.width, e.height],
                 "value": e.value if isinstance(e.value, (str, bool)) else None, "focused": e.focused, "classes": e.classes}
                for e in env.state.elements
            ]
            kind, ref = action.split()[0], int(action.split("[")[1].split("]")[0])
            recorded = {"type": kind, "ref": ref}
            if kind == "type":
                recorded["text"] = json.loads(action.split("] ", 1)[1])
            steps.append({"screenshot": f"{index}.png", "elements": elements, "action": recorded})
            views.append(view)
            valid.append(info["valid_actions"])
            view, _, _, _, info = env.step(action)
        task = env.state.utterance
    finally:
        env.close()
    path = tmp_path / "recorded.jsonl"
    path.write_text(json.dumps({"episode_id": "r", "goal": task, "env": "miniwob", "task_type": game, "steps": steps}) + "\n")
    table, screenshots = load_gui_trajectories(path)
    assert table["action"].tolist() == gold
    assert table["observation"].tolist() == views
    without_typing = [[action for action in actions if not action.startswith("type")] for actions in valid]  # its candidates: the typed texts
    assert [[a for a in actions if not a.startswith("type")] for actions in table["valid_actions"]] == without_typing
    assert len(screenshots) == len(steps)

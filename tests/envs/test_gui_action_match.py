"""EMPO's GUI action match (``envs.miniwob.action_match``) on known answers from UI-S1's
released rule (a click in the expert's box enlarged 1.2 times or within 0.04 of its point,
typed text by containment, the same key), and GUI expert-replay episodes: a GUI trajectory
file replayed (match -> the expert's next screen, mismatch -> the Patch Module), and gold
MiniWoB episodes played in a real Chromium, replayed with the policy clicking by
coordinates."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight.data.gui_trajectories import load_gui_trajectories
from hindsight.envs import EnvironmentSpec, make_env
from hindsight.envs.expert_replay import ExpertReplayEnvironment, ReplaySet, expert_trajectories
from hindsight.envs.miniwob.action_match import click_lands, gui_action_score, gui_match, is_page_view, page_elements
from hindsight.envs.miniwob.solvers import by_coordinates
from hindsight.runs.empo_run import gold_trajectories
from hindsight.rollout.tasks import TaskRef
from miniwob_checks import no_browser_left  # noqa: F401  (fixture)

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "examples" / "gui_episodes.jsonl"
VIEW = "\n".join(
    [
        'Instruction: Click on the "okay" button.',
        '[4] BUTTON "okay" @(20,50,40,20)',
        '[5] BUTTON "cancel" @(100,50,40,20)',
        '[6] INPUT_text value="" @(10,100,120,20) focused',
        '[7] INPUT_text value="" @(10,130,120,20)',
        "[-2] t \"a @(1,1,1,1) lookalike\" @(0,180,50,10)",
    ]
)
PAGE = page_elements(VIEW)


def test_the_view_reads_back_into_refs_tags_and_boxes():
    assert [(e.ref, e.tag, e.left, e.top, e.width, e.height) for e in PAGE] == [
        (4, "BUTTON", 20, 50, 40, 20), (5, "BUTTON", 100, 50, 40, 20), (6, "INPUT_text", 10, 100, 120, 20),
        (7, "INPUT_text", 10, 130, 120, 20), (-2, "t", 0, 180, 50, 10),
    ]
    assert is_page_view(VIEW) and not is_page_view("You are in the kitchen.")


@pytest.mark.parametrize(
    "action, expert, expected",
    [
        ("click [4]", "click [4]", 1.0),
        ("click 40 60", "click [4]", 1.0),        # the element's centre
        ("click 63 71", "click [4]", 1.0),        # outside the box (20..60 x 50..70), inside it enlarged 1.2x (16..64 x 48..72)
        ("click 65 60", "click [4]", 0.5),        # outside the enlarged box, 25/160 from the centre
        ("click [5]", "click [4]", 0.5),          # a click on another element: the type only
        ("click [99]", "click [4]", 0.5),         # a click on no element of the page: parsed, the type only
        ("click 105 100", "click 100 100", 1.0),  # no box: 5/160 = 0.031 <= 0.04
        ("click 107 100", "click 100 100", 0.5),  # 7/160 = 0.044 > 0.04
        ("click 100 108", "click 100 100", 1.0),  # 8/210 = 0.038
        ("click 100 109", "click 100 100", 0.5),  # 9/210 = 0.043
        ('type [6] "Hello world"', 'type [6] "hello"', 1.0),  # one contains the other, case aside
        ('type [6] " HELLO "', 'type [6] "hello"', 1.0),
        ('type [6] "help"', 'type [6] "hello"', 0.5),
        ('type [7] "hello"', 'type [6] "hello"', 0.5),        # the right text in another field
        ("press enter", "press Enter", 1.0),
        ("press Tab", "press Enter", 0.5),
        ("click [4]", "press Enter", 0.1),        # parsed, another type
        ('type [6] "okay"', "click [4]", 0.1),
        ("okay button please", "click [4]", 0.0),  # unparsable
        (None, "click [4]", 0.0),
    ],
)
def test_known_answers_of_the_official_rule(action, expert, expected):
    assert gui_action_score(action, expert, PAGE) == pytest.approx(expected)


def test_type_and_extract_match_and_the_official_click_check():
    assert gui_match("click 40 60", "click [4]", PAGE) == (True, True)
    assert gui_match("click [5]", "click [4]", PAGE) == (True, False)
    assert gui_match("press Enter", "click [4]", PAGE) == (False, False)
    # check_click: the box (left, top, right, bottom) enlarged about its centre, else the distance
    assert click_lands((0.0, 0.0), (10.0, 10.0, 20.0, 20.0), None) is False
    assert click_lands((9.5, 15.0), (10.0, 10.0, 20.0, 20.0), None) is True
    assert click_lands((8.5, 15.0), (10.0, 10.0, 20.0, 20.0), None) is False
    assert click_lands((8.7, 15.0), (10.0, 10.0, 20.0, 20.0), (15.0, 15.0)) is True  # 6.3/160 = 0.039
    assert click_lands((8.5, 15.0), (10.0, 10.0, 20.0, 20.0), (15.0, 15.0)) is False  # 6.5/160 = 0.041
    with pytest.raises(ValueError, match="none of the GUI actions"):
        gui_match("click [4]", "open the door", PAGE)
    # the expert's element is not in its (capped) view: only the same action is an extract match
    assert gui_action_score("click [42]", "click [42]", PAGE) == 1.0
    assert gui_action_score("click 40 60", "click [42]", PAGE) == 0.5
    assert gui_action_score("click 400 60", "click 400 60", PAGE) == 1.0  # off this screen (another size)


def test_a_gui_trajectory_file_replays_with_the_gui_match_and_the_patch_module():
    table, _ = load_gui_trajectories(EXAMPLE)
    trajectories = {t.episode_id: t for t in expert_trajectories(table)}
    assert trajectories["form-apple"].gui and trajectories["phone-wifi"].gui
    replay = ReplaySet({"train": [trajectories["form-apple"], trajectories["form-apple"]]})
    env = ExpertReplayEnvironment(replay, replay.spec(), patch_threshold=1)
    first, _ = env.reset(0, "train")
    # the right text in the right field: an extract match moves to the expert's next screen
    second, reward, terminated, _, info = env.step('type [3] "Apple"')
    assert reward == pytest.approx(1.0) and not terminated and info["source"] == "rollout" and info["action_valid"]
    assert second != first and 'value="apple"' in second
    # a click by coordinates inside the Submit button (10..70 x 95..117) matches the expert's click [4]
    _, reward, terminated, _, info = env.step("click 30 100")
    assert terminated and info["won"] and reward == pytest.approx(1.0)
    # mismatch: Cancel instead of Submit is the right type on the wrong target, patched once
    env.reset(1, "train")
    env.step('type [3] "apple"')
    _, reward, terminated, _, info = env.step("click [5]")
    assert reward == pytest.approx(0.1 + 0.9 * 0.5) and info["source"] == "patched" and not info["action_valid"]
    assert info["history_action"] == "click [4]" and terminated and not info["won"]


def test_past_the_threshold_a_gui_mismatch_ends_the_episode():
    table, _ = load_gui_trajectories(EXAMPLE)
    replay = ReplaySet({"train": [t for t in expert_trajectories(table) if t.episode_id == "form-apple"]})
    env = ExpertReplayEnvironment(replay, replay.spec(), patch_threshold=0)
    env.reset(0, "train")
    _, reward, terminated, _, info = env.step("press Enter")  # another type: 0.1 + 0.9 * 0.1
    assert terminated and not info["won"] and reward == pytest.approx(0.19) and info["score"] == 0.0


def test_gold_miniwob_episodes_replay_and_coordinate_clicks_match(no_browser_left):  # noqa: F811
    spec = EnvironmentSpec("miniwob", "click-button", max_steps=8)
    table = gold_trajectories([TaskRef(spec, seed, "train") for seed in range(4)])
    trajectories = expert_trajectories(table)
    assert len(trajectories) == 4 and all(t.gui for t in trajectories)
    replay = ReplaySet({"train": trajectories})
    env = ExpertReplayEnvironment(replay, replay.spec(), patch_threshold=0)
    for seed, trajectory in enumerate(trajectories):
        env.reset(seed, "train")
        page = page_elements(trajectory.observations[0])
        (clicked,) = by_coordinates([trajectory.actions[0]], page)
        assert clicked.startswith("click ") and "[" not in clicked
        _, reward, terminated, _, info = env.step(clicked)
        assert terminated and info["won"] and reward == pytest.approx(1.0)
    # a wrong button (on the first page with two): the type matches, the target does not, and with no patch left it ends
    def other_button(trajectory) -> int | None:
        expert_ref = int(trajectory.actions[0].split("[")[1].split("]")[0])
        return next((e.ref for e in page_elements(trajectory.observations[0]) if e.tag == "BUTTON" and e.ref != expert_ref), None)

    seed, other = next((seed, other_button(t)) for seed, t in enumerate(trajectories) if other_button(t) is not None)
    env.reset(seed, "train")
    _, reward, terminated, _, info = env.step(f"click [{other}]")
    assert terminated and not info["won"] and reward == pytest.approx(0.55)

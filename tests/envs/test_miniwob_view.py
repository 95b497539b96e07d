"""The MiniWoB++ environment without a browser: the text view, the action grammar and its
checks, the valid-action list and the gold solvers on pages recorded from the real tasks
(``data/miniwob_pages.json``: train seed 0 of each solved task), the parameters, the folds,
and the Chromium check. Nothing here starts a browser (the folds test holds building an environment to that)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from hindsight.envs import SUPPORTED_ENVS, EnvironmentConfigError, EnvironmentSpec, make_env
from hindsight.envs.miniwob import system
from hindsight.envs.miniwob.actions import (
    MAX_TYPED_CHARS, GuiAction, InvalidAction, format_action, parse_action, valid_actions,
)
from hindsight.envs.miniwob.env import FOLDS, fold_of, view_settings
from hindsight.envs.miniwob.page import PageState, available_tasks, candidate_texts
from hindsight.envs.miniwob.pool import browser_pool
from hindsight.envs.miniwob.processes import marked_processes
from hindsight.envs.miniwob.solvers import SOLVERS, by_coordinates, solve
from hindsight.envs.miniwob.view import SCREEN_HEIGHT, SCREEN_WIDTH, ViewSettings, elements_from_dom, render_view

PAGES = {page["task"]: page for page in json.loads((Path(__file__).parent / "data" / "miniwob_pages.json").read_text())["pages"]}
LINE = re.compile(r'\[-?\d+\] [A-Za-z_]+( "(?:[^"\\]|\\.)*"| \.[\w-]+)?( value="(?:[^"\\]|\\.)*"| checked| unchecked)? @\(-?\d+,-?\d+,\d+,\d+\)( focused)?')


def state(task: str) -> PageState:
    page = PAGES[task]
    return PageState(page["utterance"], elements_from_dom(page["dom"]), False, 0.0, None, [tuple(f) for f in page["fields"]])


def test_every_solved_task_has_a_recorded_page():
    assert set(PAGES) == set(SOLVERS)
    assert len(SOLVERS) >= 8


def test_the_view_of_enter_text_is_the_instruction_and_one_line_per_element():
    page = state("enter-text")
    assert render_view(page.utterance, page.elements) == (
        'Instruction: Enter "Tora" into the text field and press Submit.\n'
        '[5] INPUT_text value="" @(17,53,128,21)\n'
        '[6] BUTTON "Submit" @(17,84,101,31)'
    )


def test_the_view_names_a_textless_control_by_its_inner_text_and_drops_decorations_and_off_screen_text():
    view = render_view(state("click-dialog").utterance, state("click-dialog").elements)
    assert '[7] BUTTON "Close" @(96,84,20,20) focused' in view  # the "x": its hidden text
    assert "[6] SPAN .ui-dialog-title" in view
    assert "ui-resizable" not in view and " t " not in view  # 2-7 px handles; the off-screen "Close" text
    elements = {e.ref: e for e in state("click-dialog").elements}
    assert elements[-1].left < 0 and not elements[-1].on_screen


@pytest.mark.parametrize("task", sorted(PAGES))
def test_every_view_line_has_the_documented_form_and_the_view_is_deterministic(task):
    page = state(task)
    view = render_view(page.utterance, page.elements)
    lines = view.splitlines()
    assert lines[0] == f"Instruction: {page.utterance}"
    assert len(lines) > 1
    for line in lines[1:]:
        assert LINE.fullmatch(line), line
    assert render_view(page.utterance, elements_from_dom(PAGES[task]["dom"])) == view


def test_text_fragments_and_toggles_are_shown_with_their_state():
    link_view = render_view(state("click-link").utterance, state("click-link").elements)
    assert '[-1] t "Tortor dui sed quis" @(2,52,95,11)' in link_view and '[6] SPAN "In"' in link_view
    boxes = render_view(state("click-checkboxes").utterance, state("click-checkboxes").elements)
    assert '[7] LABEL "ZrLIee"' in boxes and "[8] INPUT_checkbox unchecked @(6,74,20,13)" in boxes


def test_the_caps_bound_the_view():
    page = state("click-checkboxes")
    two = render_view(page.utterance, page.elements, ViewSettings(max_elements=2)).splitlines()
    assert len(two) == 4 and two[-1] == "(9 more elements not shown)"
    short = render_view(page.utterance, page.elements, ViewSettings(max_view_chars=200))
    assert len(short) <= 200 and short.endswith("more elements not shown)")
    cut = render_view(state("click-dialog").utterance, state("click-dialog").elements, ViewSettings(max_text_chars=10))
    assert '[10] P "Tortor ..."' in cut


def test_actions_parse_to_their_canonical_form():
    elements = state("login-user").elements
    assert parse_action("click [11]", elements) == GuiAction("click", ref=11)
    assert parse_action("  CLICK   [ 11 ] ", elements) == GuiAction("click", ref=11)
    assert parse_action('type [7] "a  \\"b\\" \\\\c"', elements) == GuiAction("type", ref=7, text='a  "b" \\c')
    assert parse_action("press enter", elements) == GuiAction("press", key="<Enter>")
    assert parse_action("press ctrl+a", elements) == GuiAction("press", key="C-a")
    assert parse_action("press shift+Tab", elements) == GuiAction("press", key="S-<Tab>")
    assert parse_action("press x", elements) == GuiAction("press", key="x")
    assert parse_action("click 80 120", elements) == GuiAction("click_xy", x=80.0, y=120.0)
    for text in ["click [11]", 'type [7] "a \\"b\\""', "press ctrl+Enter", "click 0 209.5"]:
        assert format_action(parse_action(text, elements)) == text


@pytest.mark.parametrize(
    "action, reason",
    [
        ("open the door", "cannot read 'open the door'"),
        ("click", "cannot read"),
        ("click [99]", "no element [99] on the page"),
        ('type [11] "keli"', "element [11] BUTTON takes no text"),
        ('type [6] "keli"', "element [6] LABEL takes no text"),
        ('type [99] "keli"', "no element [99]"),
        ('type [7] keli', "cannot read"),
        ("type [7] \"" + "x" * (MAX_TYPED_CHARS + 1) + "\"", f"at most {MAX_TYPED_CHARS} are typed"),
        ('type [7] "a\tb"', "control character"),
        ("click 160 10", f"off the {SCREEN_WIDTH}x{SCREEN_HEIGHT} screen"),
        ("click 10 -1", "off the"),
        ("press F13", "unknown key 'F13'"),
        ("press hyper+a", "unknown modifier 'hyper'"),
    ],
)
def test_an_action_the_page_cannot_play_is_refused_with_its_reason(action, reason):
    with pytest.raises(InvalidAction, match=re.escape(reason)):
        parse_action(action, state("login-user").elements)


def test_a_text_fragment_is_read_not_clicked_by_ref():
    with pytest.raises(InvalidAction, match=re.escape("[-1] is a text fragment: click it by its coordinates")):
        parse_action("click [-1]", state("click-link").elements)
    with pytest.raises(InvalidAction, match=re.escape("[-2] is a text fragment, not a text field")):
        parse_action('type [-2] "x"', state("click-link").elements)


def test_the_valid_action_list_is_small_deterministic_and_playable():
    page = state("login-user")
    listed = valid_actions(page.elements, candidate_texts("login-user", page.utterance, page.fields))
    assert listed == [
        "click [6]", "click [7]", "click [9]", "click [10]", "click [11]",
        'type [7] "thaddeus"', 'type [7] "UT"', 'type [10] "thaddeus"', 'type [10] "UT"',
        "press Enter",
    ]
    for task in PAGES:
        page = state(task)
        listed = valid_actions(page.elements, candidate_texts(task, page.utterance, page.fields))
        assert listed == valid_actions(page.elements, candidate_texts(task, page.utterance, page.fields))
        assert 1 <= len(listed) <= 40
        for action in listed:
            parse_action(action, page.elements)
    assert "press Enter" not in valid_actions(state("click-test").elements)  # no text field
    assert valid_actions(state("enter-text").elements, ["Tora"]) == ["click [5]", "click [6]", 'type [5] "Tora"', "press Enter"]


def test_candidate_texts_fall_back_on_the_quoted_parts_of_the_instruction():
    assert candidate_texts("no-such-task", 'Type "abc" and "de f" then go.', []) == ["abc", "de f"]
    assert candidate_texts("enter-text", "Enter ...", [("target", "Tora")]) == ["Tora"]


GOLD = {
    "click-test": ["click [4]"],
    "click-button": ["click [6]"],
    "click-link": ["click [6]"],
    "enter-text": ['type [5] "Tora"', "click [6]"],
    "login-user": ['type [7] "thaddeus"', 'type [10] "UT"', "click [11]"],
    "click-checkboxes": ["click [8]", "click [10]", "click [14]", "click [15]"],
    "click-dialog": ["click [7]"],
    "focus-text": ["click [4]"],
    "enter-password": ['type [7] "rUT3X"', 'type [10] "rUT3X"', "click [11]"],
    "click-option": ["click [14]", "click [15]"],
    "click-button-sequence": ["click [4]", "click [5]"],
    "focus-text-2": ["click [6]"],
}


@pytest.mark.parametrize("task", sorted(GOLD))
def test_each_solver_reads_its_recorded_page_and_its_actions_are_listed(task):
    page = state(task)
    gold = solve(task, page)
    assert gold == GOLD[task]
    listed = valid_actions(page.elements, candidate_texts(task, page.utterance, page.fields))
    assert all(action in listed for action in gold), "constrained decoding must be able to emit the gold sequence"
    by_ref = {element.ref: element for element in page.elements}
    for ref_action, xy_action in zip(gold, by_coordinates(gold, page.elements)):
        parsed = parse_action(ref_action, page.elements)
        if parsed.kind != "click":
            assert xy_action == ref_action
            continue
        point = parse_action(xy_action, page.elements)
        box = by_ref[parsed.ref]
        assert point.kind == "click_xy"
        assert box.left <= point.x <= box.left + box.width and box.top <= point.y <= box.top + box.height


def test_parameters_are_the_view_caps_and_an_unknown_one_is_named():
    assert view_settings({"max_elements": 5}, "click-test") == ViewSettings(max_elements=5)
    with pytest.raises(EnvironmentConfigError, match=r"Unknown parameter\(s\) \['numLocations'\] for miniwob game 'click-test'"):
        view_settings({"numLocations": 1}, "click-test")
    with pytest.raises(EnvironmentConfigError, match="max_elements must be a positive integer"):
        view_settings({"max_elements": 0}, "click-test")
    with pytest.raises(EnvironmentConfigError, match=r"Unknown parameter\(s\) \['bogus'\]"):
        make_env(EnvironmentSpec("miniwob", "click-test", {"bogus": 1}))
    with pytest.raises(EnvironmentConfigError, match="Unknown MiniWoB task 'click-buton'.*click-button"):
        make_env(EnvironmentSpec("miniwob", "click-buton"))


def test_folds_are_disjoint_seed_ranges_and_a_seed_of_another_fold_is_refused():
    assert "miniwob" in SUPPORTED_ENVS
    assert len(available_tasks()) >= 125 and set(SOLVERS) <= set(available_tasks())
    started, live = browser_pool().started, marked_processes(os.getpid())
    env = make_env(EnvironmentSpec("miniwob", "click-test"))
    ranges = [set(range(start, start + size)) for start, size in FOLDS.values()]
    assert not (ranges[0] & ranges[1] or ranges[0] & ranges[2] or ranges[1] & ranges[2])
    assert env.seeds("train", 3) == [0, 1, 2] and env.seeds("dev", 2, offset=5) == [100_005, 100_006]
    assert env.seeds("test", 1) == [110_000] and env.fold_size("test") == 10_000
    assert [fold_of(seed) for seed in (0, 99_999, 100_000, 110_000, 120_000)] == ["train", "train", "dev", "test", None]
    with pytest.raises(EnvironmentConfigError, match="has 10000 test seeds; asked for 2 from offset 9999"):
        env.seeds("test", 2, offset=9_999)
    with pytest.raises(EnvironmentConfigError, match="Seed 5 is not a dev seed of miniwob"):
        env.reset(5, "dev")
    with pytest.raises(EnvironmentConfigError, match="Unknown split"):
        env.seeds("valid", 1)
    assert env.screenshot() is None
    env.close()
    assert browser_pool().started == started and marked_processes(os.getpid()) == live  # no browser for any of it


def test_check_chromium_finds_the_installed_pair_and_explains_what_is_missing(tmp_path, monkeypatch):
    _, _, major = system.check_chromium()
    assert major > 100
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", str(tmp_path / "no-chromium"))
    with pytest.raises(EnvironmentConfigError, match=r"No Chromium found.*apt-get install --no-install-recommends chromium chromium-driver"):
        system.check_chromium()
    old = tmp_path / "old-chromium"
    old.write_text("#!/bin/sh\necho 'Chromium 99.0.4844.51 built on Debian'\n")
    old.chmod(0o755)
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", str(old))
    with pytest.raises(EnvironmentConfigError, match=r"Chromium 99 .* and chromedriver \d+ .* differ"):
        system.check_chromium()


def test_a_run_on_miniwob_checks_for_chromium_at_start(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from hindsight.hooks.run_lifecycle import EnvironmentCheckHooks

    context = SimpleNamespace(params={"environment": {"env": "miniwob", "games": [{"game": "click-test"}]}})
    EnvironmentCheckHooks().after_context_created(context)  # installed: passes
    monkeypatch.setenv("MINIWOB_CHROMEDRIVER", str(tmp_path / "no-driver"))
    with pytest.raises(EnvironmentConfigError, match="No chromedriver found"):
        EnvironmentCheckHooks().after_context_created(context)


"""Gold solvers: the expert action sequence of a MiniWoB task instance, read off its page.

Each solver reads the first page of an episode (instruction, MiniWoB's fields, elements) and
returns the whole sequence in the environment's typed actions (``actions``), by element ref:
the refs of an episode stay fixed while it runs, and none of these tasks changes its page
in a way that moves a target. ``SOLVERS`` maps a task to its solver; ``solve`` raises
``UnsolvableTask`` when the page lacks what the solver looks for (a test catches it).

``by_coordinates`` turns a sequence's clicks into clicks at the centre of the clicked
element (``click x y``), the form a screen-only agent produces; the ``type`` actions stay
(typing needs a text field, found by ref).

Solved tasks (each wins 20 of 20 seeds in the tests): click-test, click-button, click-link,
enter-text, login-user, click-checkboxes, click-dialog, focus-text, enter-password,
click-option, click-button-sequence, focus-text-2.
"""

from __future__ import annotations

from typing import Callable

from hindsight.envs.miniwob.actions import format_action, parse_action, quote_text
from hindsight.envs.miniwob.page import PageState
from hindsight.envs.miniwob.view import Element


class UnsolvableTask(ValueError):
    """The page lacks what the task's solver looks for."""


def _field(state: PageState, key: str) -> str:
    for name, value in state.fields:
        if name == key:
            return value
    raise UnsolvableTask(f"no field {key!r} in {state.fields} ({state.utterance!r})")


def _one(elements: list[Element], what: str, test: Callable[[Element], bool]) -> Element:
    found = [element for element in elements if element.ref > 0 and test(element)]
    if not found:
        raise UnsolvableTask(f"no {what} on the page")
    return found[0]


def _by_id(state: PageState, element_id: str) -> Element:
    return _one(state.elements, f"element #{element_id}", lambda element: element.id == element_id)


def _click(element: Element) -> str:
    return f"click [{element.ref}]"


def _type(element: Element, text: str) -> str:
    return f'type [{element.ref}] "{quote_text(text)}"'


def _text_fields(state: PageState) -> list[Element]:
    return [element for element in state.elements if element.ref > 0 and element.is_text_field and element.on_screen]


def click_test(state: PageState) -> list[str]:
    return [_click(_by_id(state, "subbtn"))]


def click_button(state: PageState) -> list[str]:
    target = _field(state, "target")
    return [_click(_one(state.elements, f"button {target!r}", lambda e: e.tag == "BUTTON" and e.text == target))]


def click_link(state: PageState) -> list[str]:
    target = _field(state, "target")
    return [_click(_one(state.elements, f"link {target!r}", lambda e: "alink" in e.classes.split() and e.text == target))]


def enter_text(state: PageState) -> list[str]:
    return [_type(_text_fields(state)[0], _field(state, "target")), _click(_by_id(state, "subbtn"))]


def login_user(state: PageState) -> list[str]:
    return [
        _type(_by_id(state, "username"), _field(state, "username")),
        _type(_by_id(state, "password"), _field(state, "password")),
        _click(_by_id(state, "subbtn")),
    ]


def click_checkboxes(state: PageState) -> list[str]:
    targets = {value for name, value in state.fields if name.startswith("target")}
    by_ref = {element.ref: element for element in state.elements}
    boxes = [
        element for element in state.elements
        if element.tag == "INPUT_checkbox" and by_ref.get(element.parent) is not None and by_ref[element.parent].label in targets
    ]
    if len(boxes) != len(targets):
        raise UnsolvableTask(f"found {len(boxes)} of the checkboxes {sorted(targets)}")
    return [_click(box) for box in boxes] + [_click(_by_id(state, "subbtn"))]


def click_dialog(state: PageState) -> list[str]:
    return [_click(_one(state.elements, "dialog close button", lambda e: "ui-dialog-titlebar-close" in e.classes.split()))]


def focus_text(state: PageState) -> list[str]:
    return [_click(_text_fields(state)[0])]


def enter_password(state: PageState) -> list[str]:
    password = _field(state, "target")
    return [_type(_by_id(state, "password"), password), _type(_by_id(state, "verify"), password), _click(_by_id(state, "subbtn"))]


def click_option(state: PageState) -> list[str]:
    target = _field(state, "target")
    by_ref = {element.ref: element for element in state.elements}
    option = _one(
        state.elements, f"option {target!r}",
        lambda e: e.tag == "INPUT_radio" and by_ref.get(e.parent) is not None and by_ref[e.parent].label == target,
    )
    return [_click(option), _click(_by_id(state, "subbtn"))]


def click_button_sequence(state: PageState) -> list[str]:
    return [_click(_by_id(state, "subbtn")), _click(_by_id(state, "subbtn2"))]


def focus_text_2(state: PageState) -> list[str]:
    position = int(_field(state, "target"))
    fields = _text_fields(state)
    if not 1 <= position <= len(fields):
        raise UnsolvableTask(f"no text box number {position} among {len(fields)}")
    return [_click(fields[position - 1])]


SOLVERS: dict[str, Callable[[PageState], list[str]]] = {
    "click-test": click_test,
    "click-button": click_button,
    "click-link": click_link,
    "enter-text": enter_text,
    "login-user": login_user,
    "click-checkboxes": click_checkboxes,
    "click-dialog": click_dialog,
    "focus-text": focus_text,
    "enter-password": enter_password,
    "click-option": click_option,
    "click-button-sequence": click_button_sequence,
    "focus-text-2": focus_text_2,
}
"""MiniWoB task -> its gold solver."""


def solve(task: str, state: PageState) -> list[str]:
    """The gold action sequence of the instance whose first page is ``state``.

    Raises:
        KeyError: No solver for ``task`` (``SOLVERS`` lists the solved tasks).
        UnsolvableTask: The page lacks what the solver looks for.
    """
    return SOLVERS[task](state)


def by_coordinates(actions: list[str], elements: list[Element]) -> list[str]:
    """``actions`` with each ``click [ref]`` replaced by a click at the element's centre."""
    converted = []
    for text in actions:
        action = parse_action(text, elements)
        if action.kind == "click":
            element = next(element for element in elements if element.ref == action.ref)
            x, y = element.centre
            text = f"click {x} {y}"
        converted.append(format_action(parse_action(text, elements)))
    return converted

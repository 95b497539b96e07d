"""The text view of a recorded GUI step: the page as the policy reads it, from an element list.

GUI trajectory files (``hindsight.data.gui_trajectories``) give each step an element list
(ref, tag, text, box; optionally the parent, so that the list is the page's tree) beside its
screenshot. The step's observation must be the view the
MiniWoB++ environment gives its policy (``hindsight.envs.miniwob.view``: the instruction,
then one ``[ref] TAG "text" @(left,top,width,height)`` line per element), so that a policy
trained on ingested episodes reads what it will read when it plays. This module builds
that view from recorded elements with the environment's own ``Element`` and line format:

- on MiniWoB's 160 x 210 screen, with the environment's ``render_view`` itself;
- on another screen size (a phone's, in AndroidControl-like data), with the same line
  format and caps, keeping the elements whose box meets that screen.

``recorded_valid_actions`` is the finite action list of a recorded step, by the
environment's rule (``hindsight.envs.miniwob.actions.valid_actions``: a click on every shown
element, typing the candidate texts into each shown text field, ``press Enter`` when there
is one); the candidate texts of a recorded episode are the texts it types. ``element_boxes``
reads a view back into (ref -> box), for drawing an action on its screen
(``hindsight.evaluation.filmstrip``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Sequence

from hindsight.envs.miniwob.actions import MAX_TYPE_CANDIDATES, MAX_TYPED_CHARS, quote_text, valid_actions
from hindsight.envs.miniwob.view import (
    SCREEN_HEIGHT,
    SCREEN_WIDTH,
    Element,
    ViewSettings,
    render_shown,
    render_view,
)

_LINE = re.compile(r"^\[(-?\d+)\] .*@\((-?\d+),(-?\d+),(-?\d+),(-?\d+)\)")
NO_PARENT = -1
"""The parent of a recorded element that names none: an element of a flat list (0 is the
page itself, MiniWoB's body, which the view leaves out)."""


def recorded_element(
    ref: int, tag: str, text: str, box: Sequence[float], value: Any = None, focused: bool = False,
    parent: int | None = None, classes: str = "",
) -> Element:
    """An ``Element`` from a recorded element (its box is left, top, width, height in pixels;
    ``parent`` the ref of the element it sits in, None for an element of a flat list)."""
    left, top, width, height = (float(number) for number in box)
    return Element(
        ref=int(ref), parent=NO_PARENT if parent is None else int(parent), tag=str(tag), text=" ".join(str(text).split()),
        left=left, top=top, width=width, height=height, value=value, focused=bool(focused), classes=" ".join(classes.split()),
    )


def recorded_page(elements: Sequence[Element]) -> list[Element]:
    """The elements with what their children say filled in, as the environment's
    ``elements_from_dom`` fills it from the page's tree: ``leaf`` (no child but text
    fragments) and ``inner_text`` (the text of the descendants, in document order). The
    elements are in document order (a parent before its children); an element of a flat
    list has no children."""
    children: dict[int, list[Element]] = {}
    for element in elements:
        if element.parent != NO_PARENT:
            children.setdefault(element.parent, []).append(element)
    said: dict[int, str] = {}  # ref -> its text and its descendants', as the environment joins them
    inner: dict[int, str] = {}
    for element in reversed(elements):  # children before their parents
        inner[element.ref] = " ".join(part for part in (said.get(child.ref, "") for child in children.get(element.ref, [])) if part)
        said[element.ref] = " ".join(part for part in (element.text, inner[element.ref]) if part)
    return [
        replace(element, leaf=not any(child.tag != "t" for child in children.get(element.ref, [])), inner_text=inner[element.ref])
        for element in elements
    ]


def _meets(element: Element, width: int, height: int) -> bool:
    return (
        element.width > 0 and element.height > 0 and element.left < width and element.left + element.width > 0
        and element.top < height and element.top + element.height > 0
    )


def page_view(goal: str, elements: Sequence[Element], width: int, height: int, settings: ViewSettings | None = None) -> str:
    """The view of a page ``width`` x ``height`` pixels (see the module docstring)."""
    settings = settings or ViewSettings()
    if is_miniwob_screen(width, height):
        return render_view(goal, elements, settings)
    return render_shown(goal, [element for element in elements if _meets(element, width, height)], settings)


def is_miniwob_screen(width: int, height: int) -> bool:
    """Whether a screen is MiniWoB's (the environment's own view and checks apply as they are)."""
    return (width, height) == (SCREEN_WIDTH, SCREEN_HEIGHT)


def recorded_valid_actions(elements: Sequence[Element], width: int, height: int, candidates: Sequence[str]) -> list[str]:
    """The valid-action list of a recorded page (see the module docstring)."""
    if is_miniwob_screen(width, height):
        return valid_actions(elements, candidates)
    shown = [element for element in elements if _meets(element, width, height) and element.ref > 0]
    actions = [f"click [{element.ref}]" for element in shown]
    fields = [element for element in shown if element.is_text_field]
    texts = list(dict.fromkeys(text for text in candidates if text and len(text) <= MAX_TYPED_CHARS))
    actions += [f'type [{field.ref}] "{quote_text(text)}"' for field in fields for text in texts][:MAX_TYPE_CANDIDATES]
    return actions + (["press Enter"] if fields else [])


def element_boxes(view: str) -> dict[int, tuple[int, int, int, int]]:
    """ref -> (left, top, width, height) of every element line of a view."""
    boxes = {}
    for line in view.splitlines():
        match = _LINE.match(line)
        if match:
            ref, *box = (int(group) for group in match.groups())
            boxes[ref] = tuple(box)
    return boxes

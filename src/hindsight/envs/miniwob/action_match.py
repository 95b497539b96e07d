"""EMPO's action match for GUI actions, as UI-S1's released reward code matches them.

UI-S1's reward (``verl/utils/reward_score/gui_traj.py`` over ``check_response_match`` in
``gui_utils/utils.py``; docs/fidelity.md, EMPO, cites the lines and the commit) scores a
predicted action against the expert's in two steps: the **type match** (the same action
type) and the **extract match** (the same target). The step's action score is 1 for an
extract match, 0.5 for a type match only, 0.1 for any other parsed action and 0 for a
response that does not parse. Here, for the four actions of the MiniWoB environment
(``envs.miniwob.actions``):

- **clicks** (``click [ref]`` and ``click x y`` are one type, the official ``click``): a
  click by ref lands on the centre of that element's box in the expert's view, a click by
  coordinates on its point. It matches the expert's click when the point lies inside the
  expert's target box enlarged ``BOX_ENLARGE`` (1.2) times about its centre, or within
  ``POINT_DISTANCE`` (0.04) of the expert's point, the distance taken on coordinates
  divided by the screen's width and height (official ``check_click``). The expert's target
  box is its element's box (``click [ref]``) and its point that box's centre; an expert
  ``click x y`` has its point and no box (the official rule with an empty
  ``candidate_bbox``).
- **typing** (``type [ref] "text"``): the official ``check_text``: both texts lower-cased
  and stripped, one contained in the other. Our reading: our action also names the field,
  so the field must be the expert's too, by the click rule (the official ``type`` has no
  target: it types into the focused field).
- **keys** (``press KEY``): the official ``system_button`` rule, the key names equal after
  lower-casing and stripping (our reading: the official ``key`` check compares a typed
  text, which no ``press`` carries).

An action that fits the grammar but cannot be played on the expert's page (a ref that is
not there) still counts as parsed: it can reach the type match, never the extract match.
Where the expert's own element is not in its view (a page past the view's cap), only the
same action, case and spacing aside, is an extract match.
The expert's page is read back from its text view (``page_elements``): the ref, tag and
box of every element line.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

from hindsight.envs.miniwob.actions import ACTION_FORMS, GuiAction, InvalidAction, parse_action
from hindsight.envs.miniwob.view import SCREEN_HEIGHT, SCREEN_WIDTH, Element

BOX_ENLARGE = 1.2
"""The expert's target box is enlarged this many times about its centre (official BBOX_ENLARGE_FACTOR)."""
POINT_DISTANCE = 0.04
"""Largest distance to the expert's point, in screen widths / heights (official POINT_DISTANCE_THRESHOLD)."""
TYPE_MATCH_SCORE, OTHER_TYPE_SCORE = 0.5, 0.1
"""Action scores of a type match without the target, and of a parsed action of another type."""

_LINE = re.compile(r"^\[(-?\d+)\] (\S+)(?: .*)? @\((-?\d+),(-?\d+),(-?\d+),(-?\d+)\)(?: focused)?$")
_GRAMMAR = (
    ("type", re.compile(r'type\s+\[\s*(-?\d+)\s*\]\s*"((?:[^"\\]|\\.)*)"', re.IGNORECASE | re.DOTALL)),
    ("click", re.compile(r"click \[ ?(-?\d+) ?\]", re.IGNORECASE)),
    ("click_xy", re.compile(r"click (-?\d+(?:\.\d+)?),? (-?\d+(?:\.\d+)?)", re.IGNORECASE)),
    ("press", re.compile(r"press (\S+)", re.IGNORECASE)),
)


def page_elements(view: str) -> list[Element]:
    """The elements of a text view (``envs.miniwob.view``): ref, tag and box of each element
    line; text, value and flags are not read back. Lines of another form are skipped."""
    elements = []
    for line in str(view).splitlines():
        found = _LINE.match(line.strip())
        if found:
            ref, tag = int(found.group(1)), found.group(2)
            left, top, width, height = (float(found.group(i)) for i in range(3, 7))
            elements.append(Element(ref=ref, parent=1, tag=tag, text="", left=left, top=top, width=width, height=height))
    return elements


def is_page_view(view: str) -> bool:
    """Whether ``view`` is a GUI text view: an instruction line and element lines."""
    return str(view).startswith("Instruction:") and bool(page_elements(view))


def _kind(text: str) -> str | None:
    """The action type of ``text`` by the grammar alone ("click", "type", "press"), or None."""
    raw = str(text).strip()
    collapsed = " ".join(raw.split())
    for kind, pattern in _GRAMMAR:
        if pattern.fullmatch(raw if kind == "type" else collapsed):
            return "click" if kind == "click_xy" else kind
    return None


def read_action(text: str | None, elements: Sequence[Element]) -> tuple[str | None, GuiAction | None]:
    """(action type, the action played on ``elements``): (None, None) when ``text`` fits no
    form of the grammar; (type, None) when it fits one but cannot be played on the page."""
    if text is None:
        return None, None
    kind = _kind(text)
    if kind is None:
        return None, None
    try:
        return kind, parse_action(text, elements)
    except InvalidAction:
        return kind, None


def _box(element: Element) -> tuple[float, float, float, float]:
    return element.left, element.top, element.left + element.width, element.top + element.height


def _point(action: GuiAction, elements: Sequence[Element]) -> tuple[float, float] | None:
    if action.kind == "click_xy":
        return float(action.x), float(action.y)
    for element in elements:
        if element.ref == action.ref:
            return tuple(float(v) for v in element.centre)
    return None


def click_lands(point: tuple[float, float], box: tuple[float, float, float, float] | None, target: tuple[float, float] | None) -> bool:
    """The official ``check_click``: ``point`` inside ``box`` (left, top, right, bottom)
    enlarged ``BOX_ENLARGE`` times about its centre, or within ``POINT_DISTANCE`` of
    ``target`` on coordinates divided by the screen's width and height."""
    x, y = point
    if box is not None:
        left, top, right, bottom = box
        cx, cy = (left + right) / 2, (top + bottom) / 2
        half_w, half_h = (right - left) * BOX_ENLARGE / 2, (bottom - top) * BOX_ENLARGE / 2
        if cx - half_w <= x <= cx + half_w and cy - half_h <= y <= cy + half_h:
            return True
    if target is None:
        return False
    return math.hypot((target[0] - x) / SCREEN_WIDTH, (target[1] - y) / SCREEN_HEIGHT) <= POINT_DISTANCE


def text_matches(predicted: str, expert: str) -> bool:
    """The official ``check_text``: lower-cased and stripped, one contained in the other."""
    predicted, expert = predicted.lower().strip(), expert.lower().strip()
    return predicted in expert or expert in predicted


def _lands_on_target(action: GuiAction, expert: GuiAction, elements: Sequence[Element]) -> bool:
    point = _point(action, elements)
    if point is None:
        return False
    if expert.kind == "click_xy":
        return click_lands(point, None, (float(expert.x), float(expert.y)))
    target = next(element for element in elements if element.ref == expert.ref)  # played: it is on the page
    return click_lands(point, _box(target), tuple(float(v) for v in target.centre))


def gui_match(action: str | None, expert_action: str, elements: Sequence[Element]) -> tuple[bool, bool]:
    """(type match, extract match) of ``action`` against ``expert_action`` on the expert's
    page ``elements`` (see the module docstring).

    Raises:
        ValueError: The expert's action does not read on its own page.
    """
    expert_kind, expert = read_action(expert_action, elements)
    if expert_kind is None:
        raise ValueError(f"the expert action {expert_action!r} is none of the GUI actions ({ACTION_FORMS})")
    kind, played = read_action(action, elements)
    if kind != expert_kind:
        return False, False
    if expert is None:  # its element is not in the (capped) view: only the same action matches
        return True, " ".join(str(action).split()).lower() == " ".join(expert_action.split()).lower()
    if played is None:
        return True, False
    if kind == "press":
        return True, played.key.lower().strip() == expert.key.lower().strip()
    if kind == "type":
        return True, text_matches(played.text, expert.text) and _lands_on_target(played, expert, elements)
    return True, _lands_on_target(played, expert, elements)


def gui_action_score(action: str | None, expert_action: str, elements: Sequence[Element]) -> float:
    """EMPO's action score of a GUI action: 1 extract match, 0.5 type match only, 0.1 another
    parsed action, 0 unparsable (UI-S1's ``gui_traj.py``)."""
    type_match, extract_match = gui_match(action, expert_action, elements)
    if extract_match:
        return 1.0
    if type_match:
        return TYPE_MATCH_SCORE
    return OTHER_TYPE_SCORE if read_action(action, elements)[0] is not None else 0.0


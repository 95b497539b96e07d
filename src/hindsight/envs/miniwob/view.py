"""The page as the policy reads it: a bounded, deterministic text view of the element tree.

MiniWoB++ reports the page as a tree of elements (``core.getDOMInfo``: ref, tag, text,
value, id, classes, box, flags). ``elements_from_dom`` flattens it (document order) into
``Element`` records; ``render_view`` writes the instruction and one line per element worth
showing:

    Instruction: Enter "Dannie" into the text field and press Submit.
    [5] INPUT_text value="" @(16,59,128,21)
    [6] BUTTON "Submit" @(16,85,101,31)

A line is ``[ref] TAG "text" @(left,top,width,height)`` in screen pixels (the screenshot's:
one CSS pixel each), then ``value="..."`` for a text field, ``checked`` / ``unchecked`` for a
checkbox or radio button, ``focused`` for the element with the keyboard focus. An element
without text of its own shows the text inside it when it is a control (a close button's
hidden "Close"), else its first class (``.ui-dialog-title``). Text fragments that share a
parent with elements (MiniWoB's ``t`` pseudo-elements) have negative refs: they are read, not
clicked by ref.

What is shown: every element whose box meets the 160 x 210 screen, except the page body,
containers without text of their own (their children are shown), textless decorations
smaller than 8 pixels a side, and what lies inside a shown control (the control's line
carries its text). The cap (``ViewSettings``) keeps a prompt bounded: at most
``max_elements`` lines and ``max_view_chars`` characters (a last line says how many
elements were left out), each text cut to ``max_text_chars``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

SCREEN_WIDTH = 160
"""Width of the MiniWoB task area, in pixels (the screenshot's width)."""
SCREEN_HEIGHT = 210
"""Height of the MiniWoB task area, in pixels (the screenshot's height)."""
MIN_DECORATION_SIZE = 8
"""A textless element that is no control is shown only when both sides reach this (pixels)."""
CONTROL_TAGS = frozenset({"BUTTON", "A", "SELECT", "TEXTAREA", "LABEL", "OPTION"})
TEXT_FIELD_TAGS = frozenset(
    {"INPUT_text", "INPUT_password", "INPUT_email", "INPUT_search", "INPUT_tel", "INPUT_url", "INPUT_number", "TEXTAREA"}
)
"""Elements that take typed text (``type [ref] "..."``)."""
TOGGLE_TAGS = frozenset({"INPUT_checkbox", "INPUT_radio"})


@dataclass(frozen=True)
class ViewSettings:
    """How much of the page the text view shows (``environment.games[].params``)."""

    max_elements: int = 40
    """Most element lines in the view."""
    max_text_chars: int = 40
    """Longest text (or value) shown for one element; longer ones end with "..."."""
    max_view_chars: int = 3000
    """Longest view, in characters (the instruction line included)."""


@dataclass(frozen=True)
class Element:
    """One element of the page (MiniWoB's DOM info, flattened)."""

    ref: int
    """MiniWoB's element id in this episode (negative: a text fragment)."""
    parent: int
    """The parent's ref (0 for the page body)."""
    tag: str
    """Upper-case tag; inputs carry their type (``INPUT_text``); ``t`` for text fragments."""
    text: str
    """The element's own text (leaves only)."""
    left: float
    top: float
    width: float
    height: float
    value: Any = None
    """A text field's value (str) or a checkbox's / radio button's state (bool)."""
    id: str = ""
    classes: str = ""
    focused: bool = False
    leaf: bool = True
    """No child elements."""
    inner_text: str = ""
    """The text of its descendants, joined (what a control without text of its own says)."""

    @property
    def is_control(self) -> bool:
        """Buttons, links, labels, form fields: what a user acts on."""
        return self.tag in CONTROL_TAGS or self.tag.startswith("INPUT")

    @property
    def is_text_field(self) -> bool:
        """Takes typed text."""
        return self.tag in TEXT_FIELD_TAGS

    @property
    def on_screen(self) -> bool:
        """Its box meets the screen."""
        return (
            self.width > 0 and self.height > 0 and self.left < SCREEN_WIDTH and self.left + self.width > 0
            and self.top < SCREEN_HEIGHT and self.top + self.height > 0
        )

    @property
    def centre(self) -> tuple[int, int]:
        """The centre of its visible part, in whole screen pixels."""
        left, top = max(self.left, 0.0), max(self.top, 0.0)
        right, bottom = min(self.left + self.width, SCREEN_WIDTH - 1.0), min(self.top + self.height, SCREEN_HEIGHT - 1.0)
        return int((left + right) / 2), int((top + bottom) / 2)

    @property
    def label(self) -> str:
        """Its own text, or, for a control without any, the text inside it."""
        return self.text or (self.inner_text if self.is_control else "")


def _clean(text: Any) -> str:
    return " ".join(str(text or "").split())


def elements_from_dom(root: dict[str, Any]) -> list[Element]:
    """Flatten MiniWoB's DOM info (``core.getDOMInfo()``'s nested dicts) into elements, in
    document order."""
    elements: list[Element] = []

    def walk(node: dict[str, Any], parent: int) -> str:
        index = len(elements)
        elements.append(None)  # type: ignore[arg-type]  # its place in document order
        children = node.get("children") or []
        inner = " ".join(part for part in (walk(child, int(node["ref"])) for child in children) if part)
        text = _clean(node.get("text"))
        elements[index] = Element(
            ref=int(node["ref"]), parent=parent, tag=str(node.get("tag") or ""), text=text,
            left=float(node.get("left") or 0.0), top=float(node.get("top") or 0.0),
            width=float(node.get("width") or 0.0), height=float(node.get("height") or 0.0),
            value=node.get("value"), id=str(node.get("id") or ""), classes=_clean(node.get("classes")),
            focused=bool(node.get("focused")), leaf=not any(child.get("tag") != "t" for child in children),
            inner_text=_clean(inner),
        )
        return _clean(" ".join(part for part in (text, inner) if part))

    walk(root, 0)
    return elements


def shown_elements(elements: Iterable[Element]) -> list[Element]:
    """The elements the view shows, in document order (no cap; see the module docstring)."""
    elements = list(elements)
    shown_controls: set[int] = set()
    parents = {element.ref: element.parent for element in elements}
    shown = []
    for element in elements:
        if element.parent == 0 or not element.on_screen:
            continue
        ancestor, inside_control = element.parent, False
        while ancestor:
            if ancestor in shown_controls:
                inside_control = True
                break
            ancestor = parents.get(ancestor, 0)
        if inside_control and not element.is_control:
            continue
        if not element.is_control and not element.text:
            if not element.leaf or min(element.width, element.height) < MIN_DECORATION_SIZE:
                continue
        shown.append(element)
        if element.is_control:
            shown_controls.add(element.ref)
    return shown


def _quoted(text: str, limit: int) -> str:
    if len(text) > limit:
        text = text[: max(limit - 3, 0)] + "..."
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def element_line(element: Element, settings: ViewSettings) -> str:
    """The view's line for ``element``."""
    parts = [f"[{element.ref}]", element.tag]
    label = element.label
    if label:
        parts.append(_quoted(label, settings.max_text_chars))
    elif not element.is_control and element.classes:
        parts.append("." + element.classes.split()[0])
    if element.is_text_field:
        parts.append("value=" + _quoted(_clean(element.value), settings.max_text_chars))
    elif element.tag in TOGGLE_TAGS:
        parts.append("checked" if element.value is True else "unchecked")
    parts.append(f"@({round(element.left)},{round(element.top)},{round(element.width)},{round(element.height)})")
    if element.focused:
        parts.append("focused")
    return " ".join(parts)


def render_view(utterance: str, elements: Iterable[Element], settings: ViewSettings | None = None) -> str:
    """The text view of a page: the instruction, then one line per shown element, capped
    (see the module docstring)."""
    return render_shown(utterance, shown_elements(elements), settings)


def render_shown(utterance: str, shown: Sequence[Element], settings: ViewSettings | None = None) -> str:
    """The view's text for elements already chosen to be shown (``shown_elements`` on
    MiniWoB's screen; ingested GUI files of another screen size choose their own): the
    instruction, one line per element, capped."""
    settings = settings or ViewSettings()
    lines = [f"Instruction: {_clean(utterance)}"]
    length = len(lines[0])
    for count, element in enumerate(shown):
        line = element_line(element, settings)
        if count >= settings.max_elements or length + 1 + len(line) > settings.max_view_chars - 40:
            lines.append(f"({len(shown) - count} more elements not shown)")
            break
        lines.append(line)
        length += 1 + len(line)
    if not shown:
        lines.append("(no element on the screen)")
    return "\n".join(lines)

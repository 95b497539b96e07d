"""The typed actions of the GUI environment: grammar, parsing, validation, the valid list.

Four actions (verbs in any case, spaces collapsed):

    click [REF]          click the element with that ref (MiniWoB's CLICK_ELEMENT)
    type [REF] "TEXT"    click the text field REF, select what it holds and type TEXT over
                         it (``\\"`` and ``\\\\`` inside the quotes: a quote, a backslash)
    press KEY            press a key: Enter, Tab, Backspace, Delete, Escape, Space, Home,
                         End, PageUp, PageDown, ArrowUp / ArrowDown / ArrowLeft /
                         ArrowRight, or one printable character; ``ctrl+``, ``shift+``,
                         ``alt+`` in front for a combination (``press ctrl+a``)
    click X Y            click at pixel (X, Y) of the screenshot (0 <= X < 160,
                         0 <= Y < 210; MiniWoB's CLICK_COORDS)

``parse_action(text, elements)`` checks an action against the current page and returns a
``GuiAction`` or raises ``InvalidAction`` whose message says why: text that fits no form,
a ref that no element of the page has, a text fragment's ref (negative: click it by its
coordinates), typing into an element that takes no text, a point off the screen, an
unknown key, text longer than ``MAX_TYPED_CHARS`` or with characters no key types.

``valid_actions(elements, candidates)`` is the finite list for constrained decoding, in a
fixed order: ``click [ref]`` for each element the view shows (refs >= 1), then
``type [ref] "..."`` for each shown text field and each candidate text (the task's fields,
``page.candidate_texts``), then ``press Enter`` when the page has a text field. Any action
the grammar accepts is played, listed or not (``click x y`` is never listed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from hindsight.envs.miniwob.view import SCREEN_HEIGHT, SCREEN_WIDTH, Element, shown_elements

MAX_TYPED_CHARS = 64
"""Longest text one ``type`` action may type (MiniWoB's TYPING_MAX_LENGTH)."""
MAX_TYPE_CANDIDATES = 12
"""Most ``type`` entries in the valid-action list."""
SPECIAL_KEYS = {
    name.lower(): name
    for name in (
        "Enter", "Tab", "Backspace", "Delete", "Escape", "Space", "Home", "End", "PageUp", "PageDown",
        "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
    )
}
"""Key names ``press`` accepts (any case) -> their spelling."""
MODIFIERS = {"ctrl": "C-", "control": "C-", "shift": "S-", "alt": "A-"}
"""Modifier prefixes of ``press`` -> MiniWoB's key prefixes."""
ACTION_FORMS = 'click [ref], type [ref] "text", press KEY or click x y'

_CLICK_REF = re.compile(r"click \[ ?(-?\d+) ?\]", re.IGNORECASE)
_CLICK_XY = re.compile(r"click (-?\d+(?:\.\d+)?),? (-?\d+(?:\.\d+)?)", re.IGNORECASE)
_TYPE = re.compile(r'type\s+\[\s*(-?\d+)\s*\]\s*"((?:[^"\\]|\\.)*)"', re.IGNORECASE | re.DOTALL)
_PRESS = re.compile(r"press (\S+)", re.IGNORECASE)


class InvalidAction(ValueError):
    """An action the page cannot play; the message says why."""


@dataclass(frozen=True)
class GuiAction:
    """One parsed action."""

    kind: str
    """"click", "type", "press" or "click_xy"."""
    ref: int | None = None
    text: str = ""
    """The text to type (``type``)."""
    key: str = ""
    """MiniWoB's key spelling (``press``): "<Enter>", "C-a", "x"."""
    x: float | None = None
    y: float | None = None

    def __str__(self) -> str:
        return format_action(self)


def format_action(action: GuiAction) -> str:
    """The canonical text of ``action`` (``parse_action`` reads it back)."""
    if action.kind == "click":
        return f"click [{action.ref}]"
    if action.kind == "type":
        return f'type [{action.ref}] "{quote_text(action.text)}"'
    if action.kind == "click_xy":
        return f"click {action.x:g} {action.y:g}"
    return f"press {key_name(action.key)}"


def quote_text(text: str) -> str:
    """``text`` with backslashes and quotes escaped, for ``type [ref] "..."``."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text, flags=re.DOTALL)


def key_name(miniwob_key: str) -> str:
    """The ``press`` spelling of a MiniWoB key ("C-<Enter>" -> "ctrl+Enter")."""
    names = {prefix: name for name, prefix in MODIFIERS.items() if name != "control"}
    parts = []
    while miniwob_key[:2] in names:
        parts.append(names[miniwob_key[:2]])
        miniwob_key = miniwob_key[2:]
    parts.append(miniwob_key[1:-1] if miniwob_key.startswith("<") and len(miniwob_key) > 2 else miniwob_key)
    return "+".join(parts)


def parse_key(name: str) -> str:
    """MiniWoB's spelling of a ``press`` key name ("ctrl+a" -> "C-a").

    Raises:
        InvalidAction: Not a key ``press`` knows.
    """
    parts = name.split("+")
    if name.endswith("++"):  # "ctrl++": the plus key
        parts = parts[:-2] + ["+"]
    *modifiers, key = parts
    prefix = ""
    for modifier in modifiers:
        if modifier.lower() not in MODIFIERS:
            raise InvalidAction(f"unknown modifier {modifier!r} in {name!r} (use ctrl+, shift+ or alt+).")
        prefix += MODIFIERS[modifier.lower()]
    if key.lower() in SPECIAL_KEYS:
        return f"{prefix}<{SPECIAL_KEYS[key.lower()]}>"
    if len(key) == 1 and key.isprintable() and key.isascii() and key != " ":
        return prefix + key
    raise InvalidAction(f"unknown key {name!r} (keys: {', '.join(SPECIAL_KEYS.values())} or one character).")


def _element(ref: int, elements: Sequence[Element]) -> Element:
    for element in elements:
        if element.ref == ref:
            return element
    raise InvalidAction(f"no element [{ref}] on the page.")


def parse_action(text: str, elements: Sequence[Element]) -> GuiAction:
    """Parse ``text`` and check it against the page's ``elements`` (see the module docstring).

    Raises:
        InvalidAction: The action cannot be played here; the message says why.
    """
    raw = str(text).strip()
    action = " ".join(raw.split())  # the quoted text of a type action keeps its spaces (read from raw)
    match = _TYPE.fullmatch(raw)
    if match:
        ref, typed = int(match.group(1)), _unquote(match.group(2))
        element = _element(ref, elements)
        if ref < 0:
            raise InvalidAction(f"[{ref}] is a text fragment, not a text field.")
        if not element.is_text_field:
            raise InvalidAction(f"element [{ref}] {element.tag} takes no text (type into a text field).")
        if len(typed) > MAX_TYPED_CHARS:
            raise InvalidAction(f"the text is {len(typed)} characters long; at most {MAX_TYPED_CHARS} are typed at once.")
        if any(not (char.isprintable() or char == " ") for char in typed):
            raise InvalidAction("the text holds a character no key types (a control character).")
        return GuiAction("type", ref=ref, text=typed)
    match = _CLICK_REF.fullmatch(action)
    if match:
        ref = int(match.group(1))
        _element(ref, elements)
        if ref < 0:
            raise InvalidAction(f"[{ref}] is a text fragment: click it by its coordinates (click x y).")
        return GuiAction("click", ref=ref)
    match = _CLICK_XY.fullmatch(action)
    if match:
        x, y = float(match.group(1)), float(match.group(2))
        if not (0 <= x < SCREEN_WIDTH and 0 <= y < SCREEN_HEIGHT):
            raise InvalidAction(f"({x:g}, {y:g}) is off the {SCREEN_WIDTH}x{SCREEN_HEIGHT} screen.")
        return GuiAction("click_xy", x=x, y=y)
    match = _PRESS.fullmatch(action)
    if match:
        return GuiAction("press", key=parse_key(match.group(1)))
    shown = action if len(action) <= 60 else action[:57] + "..."
    raise InvalidAction(f"cannot read {shown!r}; the actions are {ACTION_FORMS}.")


def valid_actions(elements: Sequence[Element], candidates: Iterable[str] = ()) -> list[str]:
    """The finite valid-action list of a page (see the module docstring)."""
    shown = shown_elements(elements)
    actions = [f"click [{element.ref}]" for element in shown if element.ref > 0]
    fields = [element for element in shown if element.ref > 0 and element.is_text_field]
    texts = list(dict.fromkeys(text for text in candidates if text and len(text) <= MAX_TYPED_CHARS))
    typed = [f'type [{field.ref}] "{quote_text(text)}"' for field in fields for text in texts]
    actions += typed[:MAX_TYPE_CANDIDATES]
    if fields:
        actions.append("press Enter")
    return actions

"""Which MiniWoB++ tasks the project's action set can play, and what the others lack.

The actions (``actions``) are ``click [ref]``, ``type [ref] "text"`` into a text field,
``press KEY`` and ``click x y``. A task that asks for something else cannot be played, and
building it would hand a policy a page it can only lose. ``MISSING_ACTIONS`` names, per
task, the action it needs that the set lacks; it was read off each task's HTML (the
``miniwob`` package's ``html/miniwob/<task>.html``):

- *drag*: a mouse press, move and release (jQuery UI ``draggable``/``sortable``/``resizable``,
  or the task's own ``mousedown``/``mousemove`` handlers): the drag-* and draw-* tasks,
  resize-textarea, daily-calendar (an event is drawn by dragging over the calendar);
- *highlight*: selecting text by dragging over it (highlight-text, highlight-text-2,
  text-editor, whose styles apply to a selection);
- *scroll*: the page's answer lies in a scrolled area the 160 x 210 screen, and so the
  view, does not show until it is scrolled (scroll-text, scroll-text-2, sign-agreement,
  whose fields wake up only once the terms are scrolled to the end, the email-inbox tasks
  but email-inbox-noscroll, the social-media tasks, book-flight, order-food);
- *select*: a native ``<select>`` list, whose options are no elements one can click
  (choose-list, click-scroll-list);
- *hover*: keeping the mouse over a shape, no click (hover-shape);
- *type into a date or time field*: ``type`` writes into text fields only (enter-date,
  enter-time).

Every other task the package ships is playable (``playable_tasks``), those that move in real
time (chase-circle, moving-items, stock-market) included: the policy sees them at the step's
moment, and they start the same for a seed. click-pie is refused (``UNSTEADY_TASKS``): its
start is not the same page twice. ``check_playable(task)`` refuses a task of
``MISSING_ACTIONS`` by name, with the missing action. ``task_names()`` reads the package's task list from its files, without
importing ``miniwob`` or Selenium (registering the Gymnasium ids uses it).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hindsight.envs.base import EnvironmentConfigError

_DRAG = "drag (press, move and release the mouse)"
_HIGHLIGHT = "highlight (select text by dragging over it)"
_SCROLL = "scroll (what the task asks for lies below the screen's 160 x 210 pixels until scrolled)"
_SELECT = "select (choose options of a native <select> list)"
_HOVER = "hover (move the mouse over an element without clicking)"
_DATE = "type into a date or time field (type writes into text fields only)"

MISSING_ACTIONS: dict[str, str] = {
    **{task: _DRAG for task in (
        "drag-box", "drag-circle", "drag-cube", "drag-items", "drag-items-grid", "drag-shapes", "drag-shapes-2",
        "drag-single-shape", "drag-sort-numbers", "draw-circle", "draw-line", "resize-textarea", "daily-calendar",
    )},
    **{task: _HIGHLIGHT for task in ("highlight-text", "highlight-text-2", "text-editor")},
    **{task: _SCROLL for task in (
        "scroll-text", "scroll-text-2", "sign-agreement", "book-flight", "book-flight-nodelay", "order-food",
        "social-media", "social-media-all", "social-media-some", "email-inbox", "email-inbox-delete",
        "email-inbox-forward", "email-inbox-forward-nl", "email-inbox-forward-nl-turk", "email-inbox-important",
        "email-inbox-nl-turk", "email-inbox-reply", "email-inbox-star-reply",
    )},
    **{task: _SELECT for task in ("choose-list", "click-scroll-list")},
    "hover-shape": _HOVER,
    **{task: _DATE for task in ("enter-date", "enter-time")},
}
"""MiniWoB task -> the action it needs that the action set lacks (see the module docstring)."""
ACTION_SET = 'click [ref], type [ref] "text" (text fields), press KEY, click x y'
REAL_TIME_TASKS = ("chase-circle", "moving-items", "stock-market")
"""Playable tasks whose page moves in real time: the same seed starts the same page, but what
a step sees depends on when it lands (their Gymnasium ids are registered nondeterministic)."""

UNSTEADY_TASKS: dict[str, str] = {
    "click-pie": "click-pie-nodelay",
}
"""Tasks whose page is not one page per seed -> the task to play instead. click-pie's menu
unfolds in an animation whose labels come to rest a pixel apart from one start of the same
seed to the next (its reset fails ``check_env``'s determinism check); click-pie-nodelay is
the same task without the animation."""


def task_names() -> list[str]:
    """Every task the installed ``miniwob`` package ships, sorted ([] when it is not installed)."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        return []
    folders = [Path(location) / "html" / "miniwob" for location in spec.submodule_search_locations]
    return sorted({path.stem for folder in folders if folder.is_dir() for path in folder.glob("*.html")})


def playable_tasks() -> list[str]:
    """The installed tasks the action set can play and that start the same for a seed, sorted."""
    return [task for task in task_names() if task not in MISSING_ACTIONS and task not in UNSTEADY_TASKS]


def check_playable(task: str) -> None:
    """Refuse a task the action set cannot play.

    Raises:
        EnvironmentConfigError: ``task`` needs an action of ``MISSING_ACTIONS`` (the message
            names the task and that action) or is one of ``UNSTEADY_TASKS`` (it names the
            task to play instead).
    """
    if task in UNSTEADY_TASKS:
        raise EnvironmentConfigError(
            f"MiniWoB task {task!r} does not start as the same page for a seed (an animation that comes to rest "
            f"a pixel apart); play {UNSTEADY_TASKS[task]!r}, the same task without it."
        )
    if task in MISSING_ACTIONS:
        raise EnvironmentConfigError(
            f"MiniWoB task {task!r} needs {MISSING_ACTIONS[task]}, which the action set lacks ({ACTION_SET}); "
            f"{len(playable_tasks())} tasks are playable (hindsight.envs.miniwob.tasks.playable_tasks())."
        )

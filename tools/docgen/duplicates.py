"""Setting names declared in more than one settings dataclass, and why each one stays.

A setting is declared once: a library dataclass is held by the blocks that use it
(``ProjectConfig.rollout`` is the engine's ``RolloutConfig``, which holds the generation calls'
``SamplingConfig``; ``HeldoutConfig`` holds a stage's ``HeldoutPlay``; ``WorldModelConfig``
holds the world model's ``WorldModelSettings``), never copied field by field. A field NAME may
still appear in several classes when the fields mean different things (an SFT run's
``max_steps`` are optimizer steps, the environment's are episode steps). ``duplicates()``
finds every such name; each must say why in a field docstring: one of its declarations names
every other declaring class (``SFTConfig``, ...) in its docstring, which is then the reason. ``markdown()`` is the section of ``docs/configuration.md`` that lists them
(``configuration.render``), and ``tests/tools/test_docgen_duplicates.py`` fails on a name declared
twice without that reason.

The scanned classes are the settings dataclasses: each parameters file's
(``files.file_settings``), every dataclass they nest (field defaults, and the values of
dict and list defaults), each registered method's ``Settings`` from ``hindsight.methods``,
and what a scanned class's methods build for the library (their return annotations:
``ProjectConfig.rollout_config`` -> ``RolloutConfig``, ``heldout_config`` -> ``HeldoutConfig``).
A field counts where its class body declares it (an inherited field is the base's). One
nested settings class held under one name by several blocks (``sft``, ``heldout``) is
composition, not a duplicate, and is not listed.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from dataclasses import dataclass
from typing import Any

from hindsight.config.files import file_settings
from hindsight.methods import method_class, method_names
from tools.docgen.fields import field_default, field_docs, prose_text, value_text


@dataclass(frozen=True)
class Declaration:
    """One class's own field of a duplicated name."""

    cls: type
    name: str
    default: Any
    doc: str

    @property
    def where(self) -> str:
        return f"{self.cls.__module__.removeprefix('hindsight.')}.{self.cls.__qualname__}"


def _nested(value: Any) -> list[type]:
    """The dataclasses a default holds (itself, or its dict values / list items)."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
    return [type(item) for item in items if dataclasses.is_dataclass(item) and not isinstance(item, type)]


def _built(cls: type) -> list[type]:
    """Dataclasses that ``cls``'s own methods return (what it builds for the library)."""
    out = []
    for member in vars(cls).values():
        if inspect.isfunction(member):
            try:
                returned = typing.get_type_hints(member).get("return")
            except (NameError, TypeError):
                continue
            if isinstance(returned, type) and dataclasses.is_dataclass(returned):
                out.append(returned)
    return out


def settings_classes() -> list[type]:
    """Every settings dataclass (module docstring), in discovery order."""
    queue = [cls for _, cls in file_settings().values()]
    queue += [method_class(name).Settings for name in method_names() if dataclasses.is_dataclass(method_class(name).Settings)]
    seen: list[type] = []
    while queue:
        cls = queue.pop(0)
        if cls in seen or not cls.__module__.startswith("hindsight."):
            continue
        seen.append(cls)
        try:
            instance = cls()
        except TypeError:
            instance = None
        for field in dataclasses.fields(cls):
            default = getattr(instance, field.name) if instance is not None else field_default(field)
            queue += _nested(default)
        queue += _built(cls)
    return seen


def declarations(cls: type) -> list[Declaration]:
    """The fields ``cls``'s own body declares (not those it inherits)."""
    own = vars(cls).get("__annotations__", {})
    docs = field_docs(cls)
    return [
        Declaration(cls, field.name, field_default(field), docs.get(field.name, ""))
        for field in dataclasses.fields(cls) if field.name in own and not field.name.startswith("_")
    ]


def _composition(group: list[Declaration]) -> bool:
    """Every declaration holds the same nested settings class (one class held several times)."""
    kinds = {tuple(_nested(d.default)) if d.default is not dataclasses.MISSING else () for d in group}
    return len(kinds) == 1 and next(iter(kinds)) != () and not isinstance(group[0].default, (dict, list, tuple))


def duplicates() -> dict[str, list[Declaration]]:
    """Field name -> its declarations, for every name declared by more than one settings class."""
    groups: dict[str, list[Declaration]] = {}
    for cls in settings_classes():
        for declaration in declarations(cls):
            groups.setdefault(declaration.name, []).append(declaration)
    return {
        name: group for name, group in sorted(groups.items())
        if len({d.cls for d in group}) > 1 and not _composition(group)
    }


def _names(doc: str, cls: type) -> bool:
    return re.search(rf"\b{re.escape(cls.__name__)}\b", doc) is not None


def reason(group: list[Declaration]) -> Declaration | None:
    """The first declaration whose docstring names every other declaring class (None: no
    declaration says why the name is declared again)."""
    for declaration in group:
        others = {d.cls for d in group} - {declaration.cls}
        if others and all(_names(declaration.doc, other) for other in others):
            return declaration
    return None


def markdown() -> str:
    """The ``docs/configuration.md`` section: each name still declared more than once."""
    found = duplicates()
    lines = [
        "## Names declared in more than one settings class\n",
        "Each setting is declared once; a library's settings are held as they are by the blocks "
        "that use them (`ProjectConfig.rollout` is the engine's `RolloutConfig`, which holds "
        "`SamplingConfig`; `HeldoutConfig` holds a stage's `HeldoutPlay`; `WorldModelConfig` "
        "holds `WorldModelSettings`). The names below are declared by several classes because "
        "they mean different things there; the reason is the docstring of the declaration that "
        f"names the others (`tools.docgen.duplicates`). {len(found)} names.\n",
    ]
    for name, group in found.items():
        given = reason(group)
        where = "; ".join(f"{_code(d.where)}" + _shown(d.default) for d in group)
        lines.append(f"- {_code(name)}: {where}.")
        said = f"{_code(given.cls.__name__ + '.' + name)}: {prose_text(given.doc)}" if given else "**No reason given.**"
        lines.append(f"  {said}")
    return "\n".join(lines) + "\n"


def _shown(default: Any) -> str:
    """`` = <default>`` as YAML writes it; a settings object or other object by its class."""
    if default is dataclasses.MISSING:
        return ""
    if isinstance(default, (str, int, float, bool, list, tuple, dict)) or default is None:
        return f" = {_code(value_text(default))}"
    return f" = {type(default).__name__}(...)" if dataclasses.is_dataclass(default) else f" = {type(default).__name__}()"


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"`` {text} ``"

"""What the documentation generators read from a settings dataclass: each field's docstring
(the string literal after it), its default, and a docstring or default as markdown text.
``configuration`` and ``duplicates`` both use these."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import textwrap
from functools import lru_cache
from typing import Any

from hindsight.params import as_dict


@lru_cache(maxsize=None)
def field_docs(cls: type) -> dict[str, str]:
    """Each field of dataclass ``cls`` (its bases included) -> the string literal written
    right after it in the class body ("" for a field without one)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
        for statement, following in zip(body, body[1:] + [None]):
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                doc = ""
                if (
                    isinstance(following, ast.Expr)
                    and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)
                ):
                    doc = inspect.cleandoc(following.value.value)
                docs[statement.target.id] = doc
    return docs


def prose_text(text: str) -> str:
    """A docstring as one markdown line: reST ``code`` becomes `code`; outside code spans
    ``<`` and ``*`` are escaped so that markdown keeps them as text."""
    text = " ".join(text.split())
    text = text.replace("``", "`")
    parts = re.split(r"(`[^`]*`)", text)
    for i, part in enumerate(parts):
        if not part.startswith("`"):
            parts[i] = part.replace("&", "&amp;").replace("<", "&lt;").replace("*", r"\*")
    return "".join(parts)


def value_text(value: Any) -> str:
    """A default as YAML would write it (JSON flow style for lists and mappings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = as_dict(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value) if value == "" or value != value.strip() else value
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(as_dict(value), ensure_ascii=False)
    return repr(value)


def field_default(field: dataclasses.Field) -> Any:
    """A dataclass field's default (its factory called), or ``dataclasses.MISSING``."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return field.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING

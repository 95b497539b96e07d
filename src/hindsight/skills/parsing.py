"""Robust parsing of a teacher's JSON skill (docs/fidelity.md, SEED).

Teachers (an LLM endpoint, the policy itself, the rule miner) answer with
``{"episode_summary": str, "episode_skill": str}``, often wrapped: a fenced ```json block,
prose before or after, a trailing comma, Python-style single quotes. ``parse_skill_json``
tries, in order, each fenced block, the whole text, every balanced ``{...}`` object and the
span from the first ``{`` to the last ``}``; each candidate is read as strict JSON, then with
light repairs (trailing commas, typographic quotes, a missing final brace), then as a Python
literal (``ast.literal_eval`` evaluates literals only, so single quotes are read safely).
The first candidate that yields both fields as non-empty strings wins. It never raises.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from typing import Any, Iterator

logger = logging.getLogger(__name__)

REQUIRED_FIELDS = ("episode_summary", "episode_skill")
MAX_PARSE_CHARS = 100_000
"""Longer outputs are cut to this many characters before parsing."""

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|python)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_TYPOGRAPHIC_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def _balanced_objects(text: str) -> Iterator[str]:
    """Every top-level ``{...}`` span, matching braces outside double-quoted strings."""
    depth, start, in_string, escaped = 0, -1, False, False
    for position, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"' and depth > 0:
            in_string = True
        elif char == "{":
            if depth == 0:
                start = position
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                yield text[start : position + 1]


def _candidates(text: str) -> Iterator[str]:
    for match in _FENCE.finditer(text):
        yield match.group(1).strip()
    unclosed_fence = text.find("```")
    if unclosed_fence >= 0:
        yield re.sub(r"^```[a-zA-Z]*", "", text[unclosed_fence:]).strip()
    yield text.strip()
    yield from _balanced_objects(text)
    first, last = text.find("{"), text.rfind("}")
    if first >= 0:
        yield text[first : last + 1] if last > first else text[first:]


def _repairs(candidate: str) -> Iterator[str]:
    yield candidate
    repaired = _TRAILING_COMMA.sub(r"\1", candidate.translate(_TYPOGRAPHIC_QUOTES)).strip()
    yield repaired
    if repaired.startswith("{") and not repaired.endswith("}"):  # generation cut before the end
        yield _TRAILING_COMMA.sub(r"\1", repaired.rstrip(", \n") + "}")
        yield repaired + '"}'


def _load(candidate: str) -> Any:
    try:
        return json.loads(candidate, strict=False)
    except ValueError:
        pass
    try:
        return ast.literal_eval(candidate)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _skill_fields(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    fields = {name: value.get(name) for name in REQUIRED_FIELDS}
    if not all(isinstance(text, str) and text.strip() for text in fields.values()):
        return None
    return {name: " ".join(text.split()) for name, text in fields.items()}


def parse_skill_json(text: Any) -> dict[str, str] | None:
    """Extract ``{"episode_summary", "episode_skill"}`` from a teacher's output.

    Args:
        text: The raw output (anything; non-strings give None).

    Returns:
        ``{"episode_summary": str, "episode_skill": str}`` with whitespace collapsed, or None
        when no candidate holds both fields as non-empty strings. Never raises.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    text = text[:MAX_PARSE_CHARS]
    seen: set[str] = set()
    try:
        for candidate in _candidates(text):
            for attempt in _repairs(candidate):
                if attempt in seen or not attempt.startswith("{"):
                    continue
                seen.add(attempt)
                fields = _skill_fields(_load(attempt))
                if fields is not None:
                    return fields
    except Exception:  # never fatal: a parse failure only means "no skill"
        logger.exception("unexpected error while parsing a skill; treated as a parse failure")
    return None

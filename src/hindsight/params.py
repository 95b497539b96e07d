"""Typed settings from parameter dictionaries: the one place a YAML block becomes a dataclass.

``build(cls, values, where)`` turns a (possibly nested) dictionary into the dataclass
``cls``: nested dataclass fields (also inside ``list[...]``, ``dict[str, ...]`` and
``... | None``) are built recursively, and an unknown key raises ``ParameterError`` naming
the full key (``training.rl.updatez``) and the file the block comes from. Nothing else in
the project reads parameter dictionaries.

A key's path is its attribute path: ``rollout.sampling.temperature`` is
``ProjectConfig.rollout.sampling.temperature``. A field that code sets for each use (the
rollout engine's group size, which each stage sets) is declared with ``not_a_key``: it is no
key of its block and keeps its default when the block is built.

This module imports nothing of the project, so every library module may use it. Which file
a top-level key lives in is known to ``hindsight.config.files``, which registers that lookup
here when it is imported (``register_file_lookup``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Callable, Mapping, TypeVar

T = TypeVar("T")

_UNKNOWN_FILE = "conf/<env>/parameters*.yml"
"""The source named in error messages while no file lookup is registered."""

_file_of_key: Callable[[str], str] | None = None


class ParameterError(ValueError):
    """A parameter block that does not match its settings dataclass."""


def register_file_lookup(file_of_key: Callable[[str], str]) -> None:
    """Set the function that names the parameters file of a top-level key (``training`` ->
    ``conf/<env>/parameters_training.yml``), used in error messages.
    ``hindsight.config.files`` registers ``file_of_key`` on import."""
    global _file_of_key
    _file_of_key = file_of_key


def _source(where: str) -> str:
    """Which file a dotted parameter key is read from (``training.rl`` ->
    ``parameters_training.yml``), for error messages."""
    if _file_of_key is None:
        return _UNKNOWN_FILE
    return _file_of_key(where.split(".")[0].split("[")[0])


def _unknown_key_error(cls: type, where: str, unknown: list[str]) -> ParameterError:
    known = sorted(block_keys(cls))
    keys = ", ".join(f"'{where}.{key}'" if where else f"'{key}'" for key in unknown)
    return ParameterError(
        f"unknown parameter key(s) {keys} (block '{where or cls.__name__}' of {_source(where) if where else 'the parameters'}"
        f", or a --params override); the known keys of '{where or cls.__name__}' are {known}"
    )


NOT_A_KEY = "hindsight.not_a_key"
"""Field metadata key of a ``not_a_key`` field."""


def not_a_key(**field_arguments: Any) -> Any:
    """A dataclass field that code sets for each use and no parameter block holds (the
    rollout engine's group size and seed, which each stage sets); ``field_arguments`` are
    ``dataclasses.field``'s (``default``, ``default_factory``, ``compare``, ...)."""
    return dataclasses.field(**field_arguments, metadata={NOT_A_KEY: True})


def block_keys(cls: type) -> list[str]:
    """The keys of a block of dataclass ``cls``: its init fields, less the ``not_a_key`` ones."""
    return [field.name for field in dataclasses.fields(cls) if field.init and not field.metadata.get(NOT_A_KEY)]


_SCALARS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _matches(value: Any, hint: Any) -> bool:
    """Whether a converted value has the type its field declares (ints pass for floats;
    a bool never passes for a number). Hints other than scalars, lists, tuples, dicts,
    dataclasses and their unions are not checked."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, option) for option in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint is list or origin is list or hint is tuple or origin is tuple:
        return isinstance(value, (list, tuple))
    if hint is dict or origin is dict:
        return isinstance(value, Mapping)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return isinstance(value, hint)
    return True


def _describe(hint: Any) -> str:
    """A hint in words, for error messages (``int | None`` -> "an integer or null")."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_describe(option) for option in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if hint in _SCALARS:
        return _SCALARS[hint]
    if hint is list or typing.get_origin(hint) in (list, tuple):
        return "a list"
    if hint is dict or typing.get_origin(hint) is dict:
        return "a mapping"
    return getattr(hint, "__name__", str(hint))


def _convert(value: Any, hint: Any, where: str) -> Any:
    """``value`` converted to the type ``hint`` where that is (or contains) a dataclass."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        dataclass_options = [arg for arg in options if dataclasses.is_dataclass(arg)]
        if dataclass_options and isinstance(value, Mapping):
            return _convert(value, dataclass_options[0], where)
        return value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            raise ParameterError(f"parameter '{where}' ({_source(where)}) must be a mapping of {hint.__name__} keys, got {value!r}")
        return build(hint, value, where)
    if origin is list and isinstance(value, (list, tuple)):
        (item,) = typing.get_args(hint) or (Any,)
        return [_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple and isinstance(value, (list, tuple)):
        return tuple(value)
    if origin is dict and isinstance(value, Mapping):
        args = typing.get_args(hint)
        item = args[1] if len(args) == 2 else Any
        return {k: _convert(v, item, f"{where}.{k}") for k, v in value.items()}
    return value


def _default_instance(cls: type) -> Any:
    """``cls()`` when every field has a default, else None."""
    try:
        return cls()
    except TypeError:
        return None


def build(cls: type[T], values: Mapping[str, Any] | None, where: str = "", defaults: Any = None) -> T:
    """Build the settings dataclass ``cls`` from a parameter block.

    Args:
        cls: The dataclass.
        values: The block (None or missing keys: the defaults).
        where: The block's dotted key (``training.rl``), for error messages.
        defaults: An instance whose values fill the missing keys (a nested field's own
            default, e.g. the behaviour-cloning ``sft`` settings); None: the class defaults.

    Returns:
        The instance, nested dataclasses built too.

    Raises:
        ParameterError: An unknown key, or a value the dataclass rejects.
    """
    values = dict(values or {})
    keys = block_keys(cls)
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise _unknown_key_error(cls, where, unknown)
    hints = typing.get_type_hints(cls)
    if defaults is None:
        defaults = _default_instance(cls)
    converted = {}
    for name, value in values.items():
        key = f"{where}.{name}" if where else name
        default = getattr(defaults, name, None)
        if dataclasses.is_dataclass(default) and isinstance(value, Mapping):
            converted[name] = build(type(default), value, key, defaults=default)
        else:
            converted[name] = _convert(value, hints.get(name, Any), key)
        if not _matches(converted[name], hints.get(name, Any)):
            raise ParameterError(
                f"parameter '{key}' ({_source(key)}) must be {_describe(hints.get(name, Any))}, got {value!r}"
            )
    if defaults is not None:
        for field in dataclasses.fields(cls):
            if field.init and field.name not in converted:
                converted[field.name] = getattr(defaults, field.name)
    try:
        return cls(**converted)
    except ParameterError:
        raise
    except (TypeError, ValueError) as error:
        raise ParameterError(f"parameters '{where or cls.__name__}' ({_source(where) if where else 'parameters'}): {error}") from error


def as_dict(settings: Any) -> Any:
    """A settings dataclass as plain nested dicts and lists (for fingerprints and logs)."""
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        return {key: as_dict(getattr(settings, key)) for key in block_keys(type(settings))}
    if isinstance(settings, Mapping):
        return {k: as_dict(v) for k, v in settings.items()}
    if isinstance(settings, (list, tuple)):
        return [as_dict(v) for v in settings]
    return settings

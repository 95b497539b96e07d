"""Typed settings from parameter dictionaries: the one place a YAML block becomes a dataclass.

``build(cls, values, where)`` turns a (possibly nested) dictionary into the dataclass
``cls``: nested dataclass fields (also inside ``list[...]``, ``dict[str, ...]`` and
``... | None``) are built recursively, and an unknown key raises ``ParameterError`` naming
the full key (``training.rl.updatez``) and the file the block comes from. Nothing else in
the project reads parameter dictionaries.

A nested settings dataclass may also sit FLAT in its block (``flat_field``): its keys are
the enclosing block's own (``rollout.temperature`` is ``RolloutSettings.engine.sampling.temperature``),
so one library dataclass is held (composition) without moving a user-facing key. ``as_dict``
writes such a field flat too, as the YAML has it.

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


def _unknown_key_error(cls: type, where: str, unknown: list[str], skip: tuple[str, ...] = ()) -> ParameterError:
    moved = getattr(cls, "MOVED_KEYS", {})  # a settings class may name where its old keys went
    if any(key in moved for key in unknown):
        prefix = f"{where}." if where else ""
        return ParameterError(
            "; ".join(f"'{prefix}{key}' has moved: it is now '{prefix}{moved[key]}'" for key in unknown if key in moved)
            + f" ({_source(where) if where else 'the parameters'}, or a --params override)"
        )
    known = sorted(block_keys(cls, skip))
    keys = ", ".join(f"'{where}.{key}'" if where else f"'{key}'" for key in unknown)
    return ParameterError(
        f"unknown parameter key(s) {keys} (block '{where or cls.__name__}' of {_source(where) if where else 'the parameters'}"
        f", or a --params override); the known keys of '{where or cls.__name__}' are {known}"
    )


FLAT = "hindsight.flat"
"""Field metadata key of a ``flat_field``: the names of the nested fields that are no key."""


def flat_field(default_factory: Callable[[], Any], *, skip: tuple[str, ...] = ()) -> Any:
    """A nested settings dataclass whose keys sit in the enclosing block (no key of its own).

    Args:
        default_factory: Makes the nested default (its values are the keys' defaults).
        skip: Fields of the nested dataclass that are not keys of the block (set by code,
            e.g. the rollout engine's group size, which each stage sets): they keep the default.
    """
    return dataclasses.field(default_factory=default_factory, metadata={FLAT: tuple(skip)})


def flat_skip(field: dataclasses.Field) -> tuple[str, ...] | None:
    """The skipped names of a ``flat_field`` (None: an ordinary field)."""
    return field.metadata.get(FLAT) if FLAT in field.metadata else None


def block_keys(cls: type, skip: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """Each key of a block of dataclass ``cls`` -> its attribute path (a ``flat_field``'s keys
    under the field's name; its skipped names are no key)."""
    keys: dict[str, tuple[str, ...]] = {}
    for field in dataclasses.fields(cls):
        if not field.init or field.name in skip:
            continue
        inner = flat_skip(field)
        if inner is None:
            keys[field.name] = (field.name,)
        else:
            nested = typing.get_type_hints(cls)[field.name]
            keys.update({key: (field.name, *path) for key, path in block_keys(nested, inner).items()})
    return keys


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


def build(cls: type[T], values: Mapping[str, Any] | None, where: str = "", defaults: Any = None, skip: tuple[str, ...] = ()) -> T:
    """Build the settings dataclass ``cls`` from a parameter block.

    Args:
        cls: The dataclass.
        values: The block (None or missing keys: the defaults).
        where: The block's dotted key (``training.rl``), for error messages.
        defaults: An instance whose values fill the missing keys (a nested field's own
            default, e.g. the behaviour-cloning ``sft`` settings); None: the class defaults.
        skip: Fields that are no key of this block (a ``flat_field``'s ``skip``).

    Returns:
        The instance, nested dataclasses built too.

    Raises:
        ParameterError: An unknown key, or a value the dataclass rejects.
    """
    values = dict(values or {})
    unknown = sorted(set(values) - set(block_keys(cls, skip)))
    if unknown:
        raise _unknown_key_error(cls, where, unknown, skip)
    hints = typing.get_type_hints(cls)
    if defaults is None:
        defaults = _default_instance(cls)
    converted = {}
    for field in dataclasses.fields(cls):
        inner = flat_skip(field)
        if inner is None or field.name in skip:
            continue
        own = set(block_keys(hints[field.name], inner))
        flat = {key: values.pop(key) for key in list(values) if key in own}
        nested_default = getattr(defaults, field.name, None)
        converted[field.name] = build(hints[field.name], flat, where, defaults=nested_default, skip=inner)
    names = {field.name for field in dataclasses.fields(cls) if field.init and field.name not in skip}
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
        for name in names - set(values) - set(converted):
            converted[name] = getattr(defaults, name)
        for name in skip:
            converted[name] = getattr(defaults, name)
    try:
        return cls(**converted)
    except ParameterError:
        raise
    except (TypeError, ValueError) as error:
        raise ParameterError(f"parameters '{where or cls.__name__}' ({_source(where) if where else 'parameters'}): {error}") from error


def as_dict(settings: Any) -> Any:
    """A settings dataclass as plain nested dicts and lists (for fingerprints and logs)."""
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        return {key: as_dict(_attribute(settings, path)) for key, path in block_keys(type(settings)).items()}
    if isinstance(settings, Mapping):
        return {k: as_dict(v) for k, v in settings.items()}
    if isinstance(settings, (list, tuple)):
        return [as_dict(v) for v in settings]
    return settings


def _attribute(settings: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        settings = getattr(settings, name)
    return settings

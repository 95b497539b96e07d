"""Method names -> method classes: the one place an algorithm name is looked up.

The project's methods are listed here (``BUILT_IN``), each class naming itself (its
``name``); ``training.rl.algorithm`` names one, and ``training.rl.methods.<name>`` holds its
settings (``build_method``). A method defined outside the project (a user's package, a test
file) is added with ``@register("name")`` and trains by configuration alone.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from hindsight.methods.empo import EMPO
from hindsight.methods.gigpo import GiGPO
from hindsight.methods.grpo import GRPO
from hindsight.methods.opid import OPID
from hindsight.methods.seed import SEED
from hindsight.methods.wmr1 import WMR1
from hindsight.training.method import Method, MethodContext, unmet_requirements
from hindsight.params import ParameterError, _source, build
from hindsight.training.rl_config import RLConfig

M = TypeVar("M", bound=type[Method])

BUILT_IN: tuple[type[Method], ...] = (EMPO, GiGPO, GRPO, OPID, SEED, WMR1)
"""The project's methods, in the order ``method_names`` lists them."""

_METHODS: dict[str, type[Method]] = {cls.name: cls for cls in BUILT_IN}
"""The built-in methods and those added with ``register``."""


def register(name: str) -> Callable[[M], M]:
    """Class decorator for a method defined outside the project: make ``cls`` the method
    that ``training.rl.algorithm: name`` picks."""

    def decorate(cls: M) -> M:
        known = _METHODS.get(name)
        if known is not None and known is not cls and known.__qualname__ != cls.__qualname__:
            raise ValueError(f"RL method {name!r} is already registered ({known.__module__}.{known.__qualname__})")
        cls.name = name
        _METHODS[name] = cls
        return cls

    return decorate


def method_names() -> tuple[str, ...]:
    """Every method: the built-in ones, then those registered, in registration order."""
    return tuple(_METHODS)


def method_class(name: str) -> type[Method]:
    """The class registered as ``name``; a clear error naming the setting otherwise."""
    try:
        return _METHODS[name]
    except KeyError:
        raise ParameterError(f"training.rl.algorithm must be one of {method_names()}, got {name!r}") from None


def method_settings(rl: RLConfig, name: str | None = None, where: str = "training.rl") -> object:
    """The settings object of method ``name`` (default: ``rl.algorithm``) from
    ``rl.methods[name]``, its class defaults filling what is not given."""
    name = name or rl.algorithm
    cls = method_class(name)
    return build(cls.Settings, rl.methods.get(name) or {}, f"{where}.methods.{name}")


def check_method_settings(rl: RLConfig, where: str = "training.rl") -> None:
    """Every ``rl.methods`` block names a registered method and holds only its keys,
    ``rl.algorithm`` is registered, and the core settings it requires (``Method.requires``)
    are set as it needs them (run when the parameters are read, before training)."""
    if rl.algorithm not in _METHODS:  # the error names the parameters file, as ``params.build``'s do
        raise ParameterError(f"{where}.algorithm must be one of {method_names()}, got {rl.algorithm!r} ({_source(where)})")
    unmet = unmet_requirements(_METHODS[rl.algorithm], rl)
    if unmet:
        path, wanted, given = unmet[0]
        raise ParameterError(
            f"{where}.{path} must be {wanted!r} for {where}.algorithm={rl.algorithm!r} (the method requires it), "
            f"got {given!r} ({_source(where)})"
        )
    for name in rl.methods:
        if name not in _METHODS:
            raise ParameterError(
                f"{where}.methods.{name}: no RL method is registered as {name!r} (known: {method_names()}; {_source(where)})"
            )
        method_settings(rl, name, where)


def build_method(rl: RLConfig, context: MethodContext | None = None) -> Method:
    """The method ``rl.algorithm`` names, with its settings, ready for ``train_rl``."""
    return method_class(rl.algorithm)(method_settings(rl), context)

"""Value coercion for the project's tables: one function per column kind.

Each coercer returns the canonical Python value of a cell or raises ``TypeError`` with what
was expected; ``schema.coerce_columns`` turns that into an error naming the origin, the row
and the field. Booleans are never numbers here, and integral floats are integers.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np
import pandas as pd


def is_missing(value: Any) -> bool:
    """None, NaN or pd.NA."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def describe(value: Any) -> str:
    """A value's type and a short repr, for error messages."""
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def _coerce_str(value: Any) -> str:
    if isinstance(value, str):
        return str(value)
    raise TypeError("expected a string")


def _coerce_int(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("expected an integer")
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real) and float(value).is_integer():
        return int(value)
    raise TypeError("expected an integer")


def _coerce_float(value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError("expected a number")
    if not math.isfinite(float(value)):
        raise TypeError("expected a finite number")
    return float(value)


def _coerce_bool(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError("expected true/false")


def _coerce_str_list(value: Any) -> list[str]:
    if isinstance(value, (list, tuple, np.ndarray)) and all(isinstance(item, str) for item in value):
        return [str(item) for item in value]
    raise TypeError("expected a list of strings")


def _coerce_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("expected bytes")


COERCERS: dict[str, Callable[[Any], Any]] = {
    "str": _coerce_str,
    "int": _coerce_int,
    "float": _coerce_float,
    "bool": _coerce_bool,
    "str_list": _coerce_str_list,
    "bytes": _coerce_bytes,
}

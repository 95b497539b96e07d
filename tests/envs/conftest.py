"""Fixtures of the environment tests."""

from __future__ import annotations

import time

import pytest


def _wait_until_dead(backend, timeout: float = 30.0) -> None:
    """Wait until ``backend``'s JVM has exited (after a kill), at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while backend.is_alive and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not backend.is_alive


@pytest.fixture()
def wait_until_dead():
    """The ``_wait_until_dead(backend, timeout=30.0)`` helper."""
    return _wait_until_dead

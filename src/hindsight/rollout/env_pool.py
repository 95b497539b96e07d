"""A pool of environments reused across episodes.

Building an environment can be costly (a JVM, a game file), stepping it is cheap. The
rollout engine keeps at most ``max_size`` environments alive, built through the caller's
``env_factory(spec)``; an episode borrows one whose spec matches (``acquire``), resets it to
its task, and gives it back when it ends (``release``). A pool can outlive one
``run_rollouts`` call (the RL loop passes the same pool every iteration).
"""

from __future__ import annotations

import logging
from typing import Callable

from hindsight.envs.base import EnvironmentSpec, TextEnvironment
from hindsight.rollout.tasks import spec_key

logger = logging.getLogger(__name__)

EnvFactory = Callable[[EnvironmentSpec], TextEnvironment]


class EnvPool:
    """Environments keyed by spec, built on demand, at most ``max_size`` alive."""

    def __init__(self, env_factory: EnvFactory, max_size: int = 32) -> None:
        """Create an empty pool.

        Args:
            env_factory: Builds an environment for a spec (e.g. ``hindsight.envs.make_env``).
            max_size: Most environments alive at once (idle ones of other specs are closed
                to make room).
        """
        if max_size < 1:
            raise ValueError(f"EnvPool: max_size must be >= 1, got {max_size}.")
        self.env_factory = env_factory
        self.max_size = max_size
        self._idle: dict[str, list[TextEnvironment]] = {}
        self._busy: set[int] = set()  # id() of the borrowed environments
        self._keys: dict[int, str] = {}  # id(env) -> the spec key it was built for
        self.built = 0

    @property
    def size(self) -> int:
        """Environments alive (idle + borrowed)."""
        return len(self._busy) + sum(len(envs) for envs in self._idle.values())

    def acquire(self, spec: EnvironmentSpec) -> TextEnvironment:
        """Borrow an environment for ``spec`` (built when none is idle)."""
        key = spec_key(spec)
        idle = self._idle.get(key)
        if idle:
            env = idle.pop()
            self._busy.add(id(env))
            return env
        if self.size >= self.max_size:
            self._close_one_idle()
        if self.size >= self.max_size:
            raise RuntimeError(f"EnvPool: all {self.max_size} environments are in use.")
        env = self.env_factory(spec)
        self._keys[id(env)] = key
        self.built += 1
        self._busy.add(id(env))
        return env

    def release(self, env: TextEnvironment) -> None:
        """Give a borrowed environment back (a no-op for one not borrowed)."""
        if id(env) not in self._busy:
            return
        self._busy.discard(id(env))
        self._idle.setdefault(self._keys[id(env)], []).append(env)

    def discard(self, env: TextEnvironment) -> None:
        """Close a borrowed environment that cannot be reused (a no-op for one not borrowed)."""
        if id(env) not in self._busy:
            return
        self._busy.discard(id(env))
        self._keys.pop(id(env), None)
        _close_quietly(env)

    def _close_one_idle(self) -> None:
        for envs in self._idle.values():
            if envs:
                env = envs.pop()
                self._keys.pop(id(env), None)
                _close_quietly(env)
                return

    def close(self) -> None:
        """Close every idle environment."""
        for envs in self._idle.values():
            while envs:
                env = envs.pop()
                self._keys.pop(id(env), None)
                _close_quietly(env)

    def __enter__(self) -> "EnvPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_quietly(env: TextEnvironment) -> None:
    try:
        env.close()
    except Exception as error:  # noqa: BLE001 - closing must not mask the real outcome
        logger.warning("Closing an environment failed: %s", error)

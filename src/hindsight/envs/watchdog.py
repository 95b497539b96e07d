"""Deadlines for calls into a simulator: the watchdog that turns a hang into a crash.

A py4j call waits for the JVM's answer on a socket, with no limit: a simulator stuck in a
loop, a JVM stopped by the system (``SIGSTOP``) or thrashing in garbage collection would stall
the whole run. ``CallWatchdog`` holds one ``Deadline`` per call in flight; one daemon thread
sleeps until the earliest of them. When a call is still running at its deadline, the thread
marks it ``expired`` and hands it to ``on_expire`` (``JavaBackend`` kills the JVM there), so
the blocked py4j call fails at once and the caller, seeing ``expired``, reports a timeout
instead of a crash.

Arming a deadline costs a lock and a set insert (the thread is woken only when the new
deadline is earlier than the one it sleeps towards); there is one thread per watchdog, for
the life of the process. A watchdog belongs to the process that made it: after a fork the
owner makes a new one (``pid`` tells), since the parent's thread does not exist in the child.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class Deadline:
    """One call in flight: when it must be done by, and whether it ran past that."""

    at: float
    """``time.monotonic()`` value the call must finish by."""
    timeout_s: float
    """The limit it was armed with."""
    generation: int
    """The backend generation (JVM) the call runs on."""
    expired: bool = False
    """Set (once) by the watchdog thread when the call was still running at ``at``."""


class CallWatchdog:
    """Expires calls that run past their deadline (see the module docstring).

    Args:
        on_expire: Called from the watchdog thread with each expired ``Deadline`` (after it
            is marked ``expired``); it should make the hung call return, e.g. by killing the
            process it waits on. Its errors are logged, never raised.
        name: A human name for the thread and the log ("TextWorldExpress").
    """

    def __init__(self, on_expire: Callable[[Deadline], None], name: str) -> None:
        self.pid = os.getpid()
        self.name = name
        self._on_expire = on_expire
        self._condition = threading.Condition()
        self._active: set[Deadline] = set()
        self._wake_at = math.inf
        self._thread: threading.Thread | None = None

    def arm(self, timeout_s: float, generation: int) -> Deadline:
        """Start the clock of a call that must finish within ``timeout_s`` seconds."""
        if not timeout_s > 0:
            raise ValueError(f"A call timeout must be positive, got {timeout_s!r}.")
        deadline = Deadline(time.monotonic() + float(timeout_s), float(timeout_s), generation)
        with self._condition:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self.name} call watchdog", daemon=True)
                self._thread.start()
            self._active.add(deadline)
            if deadline.at < self._wake_at:
                self._condition.notify()
        return deadline

    def disarm(self, deadline: Deadline) -> bool:
        """Stop the clock of a call that returned (or failed).

        Returns:
            Whether the call had expired: the watchdog acted on it (or is acting on it).
        """
        with self._condition:
            self._active.discard(deadline)
            return deadline.expired

    def _run(self) -> None:
        while True:
            with self._condition:
                now = time.monotonic()
                expired = [deadline for deadline in self._active if deadline.at <= now]
                for deadline in expired:
                    deadline.expired = True
                    self._active.discard(deadline)
                self._wake_at = min((deadline.at for deadline in self._active), default=math.inf)
                if not expired:
                    self._condition.wait(None if self._wake_at == math.inf else self._wake_at - now)
                    continue
            for deadline in expired:
                logger.debug("%s watchdog: a call expired (generation %d)", self.name, deadline.generation)
                try:
                    self._on_expire(deadline)
                except Exception:  # noqa: BLE001 - the watchdog must outlive a failed kill
                    logger.exception("%s watchdog: acting on an expired call failed", self.name)

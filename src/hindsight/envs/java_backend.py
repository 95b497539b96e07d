"""One JVM per simulator, shared by every environment of that simulator in the process.

TextWorldExpress and ScienceWorld are Java/Scala simulators driven through py4j. Their own
Python classes (``TextWorldExpressEnv``, ``ScienceWorldEnv``) start one JVM per instance.
The rollout engine holds many environments at once (e.g. 32), and a JVM is not cheap
(tens of MB to a GB each; figures in docs/measurements.md), so every environment of a
simulator shares one. The JVM's default heap cap is 1/4 of the machine's RAM;
``java_options=("-Xmx512m",)`` caps it.

Each simulator's Java entry point (``PythonInterface``) keeps its game state in the object,
not in globals, so many of them can live in one JVM and be driven independently (checked by
interleaving the gold paths of different games on one JVM: each one wins). A ``JavaBackend``
is that JVM; the adapters create one ``PythonInterface`` on it each.

Crashes. When the JVM dies (killed, out of memory), every call through it fails. ``call``
turns py4j's errors into ``EnvironmentCrashedError``; ``ensure_running`` starts a fresh JVM
in-process. Each start increments ``generation``; an adapter remembers the generation its
Java object belongs to, so an object of a dead JVM is never used against a new one (a new JVM
may reuse the port and object ids of the old one).

Processes: a backend belongs to the process that started its JVM. In a forked child it
counts as not running (the child starts its own JVM on first use, and never shuts down the
parent's), so environment workers in separate processes each get their own JVM.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Any, Callable, Sequence

from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway
from py4j.protocol import Py4JError

from hindsight.envs.base import EnvironmentCrashedError
from hindsight.envs.java import check_java

logger = logging.getLogger(__name__)


class JavaBackend:
    """A JVM running one simulator jar, reached through a py4j gateway.

    Args:
        jar_path: The simulator's jar (shipped inside its Python package).
        name: A human name for messages ("TextWorldExpress").
        java_options: Extra JVM options, e.g. ``("-Xmx1g",)``.
    """

    def __init__(self, jar_path: str, name: str, java_options: Sequence[str] = ()) -> None:
        self.jar_path = str(jar_path)
        self.name = name
        self.java_options = tuple(java_options)
        self.generation = 0
        self._gateway: JavaGateway | None = None
        self._process = None
        self._owner_pid: int | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """Process id of the current JVM (None before the first start)."""
        return self._process.pid if self._process is not None else None

    @property
    def is_alive(self) -> bool:
        """Whether this process's JVM is running."""
        return (
            self._process is not None
            and self._owner_pid == os.getpid()
            and self._process.poll() is None
        )

    def ensure_running(self) -> int:
        """Start the JVM if it is not running (first use, or after it died).

        Returns:
            The current generation (incremented by each start).
        """
        with self._lock:
            if not self.is_alive:
                self._start()
            return self.generation

    def new_object(self, class_name: str) -> tuple[Any, int]:
        """Create a Java object of ``class_name`` on the running JVM (starting it if needed).

        Returns:
            The py4j proxy and the generation it belongs to.
        """
        generation = self.ensure_running()
        java_class = self._gateway.jvm
        for part in class_name.split("."):
            java_class = getattr(java_class, part)
        return self.call(generation, java_class), generation

    def call(self, generation: int, function: Callable[..., Any], *args: Any) -> Any:
        """Call ``function`` (a method of a Java object of ``generation``) with ``args``.

        Raises:
            EnvironmentCrashedError: The JVM died, was replaced, or the call failed inside py4j
                or the simulator.
        """
        if generation != self.generation:
            raise EnvironmentCrashedError(
                f"The {self.name} JVM this environment was using died and was replaced by a new "
                f"one (pid {self.pid}); call restart() on the environment."
            )
        if not self.is_alive:
            raise EnvironmentCrashedError(
                f"The {self.name} JVM (pid {self.pid}) is no longer running; call restart() on "
                "the environment."
            )
        try:
            return function(*args)
        except Py4JError as error:
            state = "died" if not self.is_alive else "failed"
            raise EnvironmentCrashedError(
                f"The {self.name} backend {state} during a call ({type(error).__name__}: "
                f"{str(error).strip()[:300]}); call restart() on the environment."
            ) from error

    def kill(self) -> None:
        """Kill the JVM at once (what a crash looks like)."""
        if self.is_alive:
            self._process.kill()
            self._process.wait(timeout=30)

    def close(self) -> None:
        """Shut the JVM down; a later ``ensure_running`` starts a new one."""
        with self._lock:
            self._shutdown()

    def _start(self) -> None:
        check_java()
        self._shutdown()
        port, process = launch_gateway(
            classpath=self.jar_path,
            die_on_exit=True,
            cwd=os.path.dirname(self.jar_path),
            javaopts=list(self.java_options),
            return_proc=True,
        )
        self._gateway = JavaGateway(
            gateway_parameters=GatewayParameters(port=port, auto_field=False), java_process=process
        )
        self._process = process
        self._owner_pid = os.getpid()
        self.generation += 1
        logger.info("Started the %s JVM (pid %d, generation %d)", self.name, process.pid, self.generation)

    def _shutdown(self) -> None:
        gateway, process = self._gateway, self._process
        self._gateway = None
        if self._owner_pid != os.getpid():
            self._process = None  # the parent's JVM: not ours to stop
            return
        if gateway is not None:
            try:
                gateway.shutdown()
            except Exception as error:  # a dead JVM cannot answer; nothing left to release
                logger.debug("%s gateway shutdown: %s", self.name, error)
        if process is not None and process.poll() is None:
            try:  # py4j's die_on_exit makes the JVM exit when its stdin closes
                process.stdin.close()
                process.wait(timeout=5)
            except Exception:
                process.kill()
                process.wait(timeout=30)


_SHARED_BACKENDS: dict[tuple[str, tuple[str, ...]], JavaBackend] = {}
_SHARED_LOCK = threading.Lock()


DEFAULT_JAVA_OPTIONS = ("-Xmx768m",)
"""Heap cap of the shared JVMs unless ``HINDSIGHT_JVM_OPTIONS`` says otherwise: without it
the JVM may grow its heap (and RSS) to 1/4 of the machine's RAM before collecting."""


def default_java_options() -> tuple[str, ...]:
    """``HINDSIGHT_JVM_OPTIONS`` (space-separated) or ``DEFAULT_JAVA_OPTIONS``."""
    configured = os.environ.get("HINDSIGHT_JVM_OPTIONS")
    return tuple(configured.split()) if configured is not None else DEFAULT_JAVA_OPTIONS


def shared_backend(jar_path: str, name: str, java_options: Sequence[str] | None = None) -> JavaBackend:
    """The process-wide backend for ``jar_path`` (one JVM per jar and JVM options).

    Args:
        jar_path: The simulator's jar.
        name: A human name for messages.
        java_options: Extra JVM options; a different tuple gets its own JVM.

    Returns:
        The shared ``JavaBackend`` (its JVM starts on first use).
    """
    java_options = default_java_options() if java_options is None else tuple(java_options)
    key = (str(jar_path), java_options)
    with _SHARED_LOCK:
        if key not in _SHARED_BACKENDS:
            _SHARED_BACKENDS[key] = JavaBackend(jar_path, name, java_options)
        return _SHARED_BACKENDS[key]


@atexit.register
def _close_shared_backends() -> None:
    for backend in list(_SHARED_BACKENDS.values()):
        backend.close()

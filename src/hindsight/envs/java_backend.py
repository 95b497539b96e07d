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
may reuse the port and object ids of the old one). A killed JVM can still look alive for a
moment (the kernel is tearing it down) while its port already refuses connections, so after
a call failed with anything but a Java exception, ``ensure_running`` first checks that the
JVM answers a trivial call, and replaces it when it does not.

Hangs. ``call(..., timeout_s=...)`` arms a deadline on the backend's ``CallWatchdog``
(``watchdog``); a call still running at its deadline gets the JVM killed (it cannot be
interrupted otherwise: the py4j call waits on a socket), which makes the call fail at once,
and raises ``EnvironmentTimeoutError`` (a kind of ``EnvironmentCrashedError``) naming the
timeout. From there it is a crash: ``restart()`` on the environment starts a fresh JVM.
Every environment on the killed JVM sees a crash on its next call, as after any JVM death.
py4j also talks to the JVM on its own: when Python collects the proxy of a Java object
(e.g. a returned list), its finalizer sends a blocking "release" command, at whatever point
the garbage collector runs, outside any guarded call; on a hung JVM that would hang the run
where no watchdog looks. So the backend's gateway client queues those releases
(``_DeferredReleaseClient``) and sends them at the start of the next guarded call.

Processes: a backend belongs to the process that started its JVM. In a forked child it
counts as not running (the child starts its own JVM on first use, and never shuts down the
parent's), so environment workers in separate processes each get their own JVM.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections import deque
from typing import Any, Callable, Sequence

from py4j.java_gateway import GatewayClient, GatewayParameters, JavaGateway, launch_gateway
from py4j.protocol import Py4JError, Py4JJavaError

from hindsight.envs.base import EnvironmentCrashedError, EnvironmentTimeoutError
from hindsight.envs.java import check_java
from hindsight.envs.watchdog import CallWatchdog, Deadline

logger = logging.getLogger(__name__)


class _DeferredReleaseClient(GatewayClient):
    """A py4j client whose object releases wait for ``send_pending_releases`` (module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending_releases: deque[str] = deque()

    def garbage_collect_object(self, target_id: str) -> None:  # called by py4j's finalizers
        self._pending_releases.append(target_id)

    def send_pending_releases(self) -> None:
        """Tell the JVM about the Java objects Python no longer references."""
        while self._pending_releases:
            try:
                target_id = self._pending_releases.popleft()
            except IndexError:  # another thread took the last one
                return
            super().garbage_collect_object(target_id)


class _Gateway(JavaGateway):
    """A py4j gateway whose client defers object releases."""

    def _create_gateway_client(self) -> _DeferredReleaseClient:
        return _DeferredReleaseClient(gateway_parameters=self.gateway_parameters)


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
        self._kill_lock = threading.Lock()
        self._watchdog: CallWatchdog | None = None
        self._suspect: int | None = None  # generation of the last call failure that was not a Java exception
        self.timeouts = 0
        """Calls that ran past their timeout (each killed the JVM)."""

    @property
    def pid(self) -> int | None:
        """Process id of the current JVM (None before the first start)."""
        return self._process.pid if self._process is not None else None

    @property
    def jvm(self) -> Any:
        """py4j's view of the running JVM's classes (``jvm.java.lang.System``...); None when
        no JVM was started. Calls through it are not guarded: pass them to ``call``."""
        return self._gateway.jvm if self._gateway is not None else None

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
            if self.is_alive and self._suspect == self.generation and not self._responds():
                logger.warning("The %s JVM (pid %d) does not answer; replacing it.", self.name, self.pid)
                self.kill()
            if not self.is_alive:
                self._start()
            return self.generation

    def _responds(self) -> bool:
        """Whether the JVM answers a trivial call (after a call through it failed)."""
        try:
            self.call(self.generation, lambda: self._gateway.jvm.java.lang.System.nanoTime(), timeout_s=PROBE_TIMEOUT_S)
        except EnvironmentCrashedError:
            return False
        self._suspect = None
        return True

    def new_object(self, class_name: str, timeout_s: float | None = None) -> tuple[Any, int]:
        """Create a Java object of ``class_name`` on the running JVM (starting it if needed).

        Returns:
            The py4j proxy and the generation it belongs to.

        Raises:
            EnvironmentCrashedError: The JVM failed while the object was made (as ``call``).
        """
        generation = self.ensure_running()

        def create() -> Any:
            java_class = self._gateway.jvm
            for part in class_name.split("."):
                java_class = getattr(java_class, part)
            return java_class()

        return self.call(generation, create, timeout_s=timeout_s), generation

    def call(
        self, generation: int, function: Callable[..., Any], *args: Any, timeout_s: float | None = None
    ) -> Any:
        """Call ``function`` (a method of a Java object of ``generation``) with ``args``.

        Args:
            generation: The generation the Java object belongs to.
            function: The py4j method (or a function making py4j calls).
            *args: Its arguments.
            timeout_s: Longest the call may take; past it the JVM is killed (None: no limit).

        Raises:
            EnvironmentTimeoutError: The call ran past ``timeout_s``; the JVM was killed.
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
        deadline = self._arm(timeout_s, generation)
        try:
            self._gateway._gateway_client.send_pending_releases()
            result = function(*args)
        except Py4JError as error:
            self._check_deadline(deadline)
            if not isinstance(error, Py4JJavaError):  # not an answer: the JVM may be dying
                self._suspect = generation
            state = "died" if not self.is_alive else "failed"
            raise EnvironmentCrashedError(
                f"The {self.name} backend {state} during a call ({type(error).__name__}: "
                f"{str(error).strip()[:300]}); call restart() on the environment."
            ) from error
        except BaseException:
            self._check_deadline(deadline)
            raise
        self._check_deadline(deadline)
        return result

    def _arm(self, timeout_s: float | None, generation: int) -> Deadline | None:
        if timeout_s is None:
            return None
        if self._watchdog is None or self._watchdog.pid != os.getpid():
            self._watchdog = CallWatchdog(self._expire, self.name)
        return self._watchdog.arm(timeout_s, generation)

    def _check_deadline(self, deadline: Deadline | None) -> None:
        """Raise ``EnvironmentTimeoutError`` when ``deadline`` expired (after making sure the
        JVM it ran on is dead, so that a restart cannot reconnect to it)."""
        if deadline is None or not self._watchdog.disarm(deadline):
            return
        pid = self.pid
        self._expire(deadline)
        raise EnvironmentTimeoutError(
            f"A {self.name} call took longer than the step timeout ({deadline.timeout_s:g} s); "
            f"the JVM (pid {pid}) was killed. Call restart() on the environment."
        )

    def _expire(self, deadline: Deadline) -> None:
        """Kill the JVM a timed-out call runs on (once; never a newer JVM)."""
        with self._kill_lock:
            if deadline.generation == self.generation and self.is_alive:
                self.timeouts += 1
                logger.warning(
                    "%s: a call ran past its %g s timeout; killing the JVM (pid %d).",
                    self.name, deadline.timeout_s, self.pid,
                )
                self._process.kill()
                self._process.wait(timeout=30)

    def kill(self) -> None:
        """Kill the JVM at once (what a crash looks like)."""
        with self._kill_lock:
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
        self._gateway = _Gateway(
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


PROBE_TIMEOUT_S = 10.0
"""How long a JVM under suspicion (a call through it failed) gets to answer a trivial call
before ``ensure_running`` replaces it."""


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

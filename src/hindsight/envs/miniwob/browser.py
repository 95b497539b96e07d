"""One headless Chromium driven through chromedriver, and the windows the environments use.

A ``Browser`` is a chromedriver process and its Chromium (``processes.BrowserProcesses``
finds and kills them as a whole). Each environment holds one ``Window`` of a browser: a
top-level window with its own page, so that several environments share one browser
process (a window costs a renderer, about 60-130 MiB; a browser about 250 MiB more and
1-2 s to start). Windows are separate top-level windows, not tabs: none is in the
background, so none has its timers or rendering throttled.

Every call into the browser goes through ``Window.call``: it switches the driver to the
window (about 1 ms when it is not already the current one), runs the call under the
pool's watchdog (``hindsight.envs.watchdog``: past ``timeout_s`` the browser is killed) and
turns what can go wrong into the environment errors of ``hindsight.envs.base``:

    the call ran past its deadline          EnvironmentTimeoutError (browser killed)
    chromedriver or Chromium died           EnvironmentCrashedError (the rest killed too)
    the page failed (a renderer crash, a    EnvironmentCrashedError (the browser lives on;
    script error in the task)               ``restart`` opens a fresh window)

A browser that died is dead for every window on it: each of their next calls raises
``EnvironmentCrashedError`` at once, as every episode on a killed JVM meets the death on
its next call. A crashed renderer ("tab crashed") is dead for its window only: every call on
that window fails until the window is given back (``restart``).

No browser outlives its Python process (``processes``): chromedriver and Chromium run with a
directory of their own as ``HOME``, ``TMPDIR`` and profile parent, which ``kill`` removes;
each browser is registered with the process's ``reaper.BrowserReaper`` before chromedriver starts,
so a SIGKILL of Python (or its death in any other way, from any thread) kills the browser and
removes the directory within about a second; the first browser start of a process kills and
removes what dead runs left (``dead_runs.clean_up_dead_runs``). ``launch`` starts a browser
(``start_browser``: its directory, chromedriver's session, ``CHROMIUM_FLAGS``).
"""

from __future__ import annotations

import itertools
import logging
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from hindsight.envs.base import EnvironmentCrashedError, EnvironmentTimeoutError
from hindsight.envs.miniwob.launch import start_browser
from hindsight.envs.miniwob.processes import BrowserProcesses
from hindsight.envs.miniwob.reaper import browser_reaper
from hindsight.envs.watchdog import CallWatchdog

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrowserSettings:
    """How many browsers a Python process may run, and how they start.

    Defaults fit 2 CPU cores and 24 GiB: 2 browsers of up to 16 windows each hold the 32
    live episodes of the rollout engine's default ``max_parallel`` in about 1.7 GiB (a browser
    with one window about 390 MiB, each further window about 32 MiB; docs/gui.md).
    """

    max_browsers: int = 2
    """Most Chromium browsers alive at once in this Python process (each rollout worker
    process has its own). A window is opened in a browser that has room before another
    browser is started."""
    windows_per_browser: int = 16
    """Most windows (environments) one browser holds; asking for more than
    ``max_browsers * windows_per_browser`` raises ``EnvironmentConfigError``."""
    start_timeout_s: float = 60.0
    """Longest a browser start (chromedriver, Chromium, the first window) may take."""
    idle_browsers: int = 0
    """Above 0, a closed environment's window stays open (blank) for the next environment,
    and up to this many browsers (counted in ``max_browsers``) keep running after their last
    environment closed: an evaluation, which builds environments afresh for every task
    type, split, trial and agent, then starts no browser (1-2 s each) and opens no window
    (0.25 s) each time. 0: a closed environment's window closes and a browser ends with its
    last one. A kept browser ends at ``close_idle_browsers`` (the end of a Kedro run) or
    at exit."""

    def __post_init__(self) -> None:
        for name in ("max_browsers", "windows_per_browser"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"BrowserSettings.{name} must be a positive integer, got {value!r}.")
        idle = self.idle_browsers
        if isinstance(idle, bool) or not isinstance(idle, int) or not 0 <= idle <= self.max_browsers:
            raise ValueError(f"BrowserSettings.idle_browsers must be an integer from 0 to max_browsers, got {idle!r}.")
        if not self.start_timeout_s > 0:
            raise ValueError(f"BrowserSettings.start_timeout_s must be positive, got {self.start_timeout_s!r}.")


_browser_ids = itertools.count(1)


class Browser:
    """One chromedriver + Chromium (see the module docstring).

    Args:
        chrome_binary: Chromium's executable.
        chromedriver: chromedriver's executable (of the same major version).
        watchdog: Expires calls that run past their deadline (kills this browser).
    """

    def __init__(self, chrome_binary: str, chromedriver: str, watchdog: CallWatchdog, start_timeout_s: float = 60.0) -> None:
        self.id = next(_browser_ids)
        self.watchdog = watchdog
        self.lock = threading.RLock()
        self.windows: set[str] = set()
        self.dead = False
        self.death: str = ""
        self.spares: list[str] = []
        """Open windows no environment holds, taken first by ``open_window`` (the first
        window of the start; with ``idle_browsers``, the windows environments gave back)."""
        self._current: str | None = None
        self.processes: BrowserProcesses | None = None
        self._start(chrome_binary, chromedriver, start_timeout_s)

    def _start(self, chrome_binary: str, chromedriver: str, timeout_s: float) -> None:
        """Start chromedriver and Chromium (``launch.start_browser``: a start past
        ``timeout_s`` is killed and raises ``EnvironmentCrashedError``, as does any other
        failed start)."""
        self.driver, self.service, self.processes = start_browser(chrome_binary, chromedriver, timeout_s)
        self._current = self.driver.current_window_handle
        self.spares = [self._current]

    @property
    def pids(self) -> list[int]:
        """The pids of this browser's living processes (chromedriver first)."""
        members = self.processes.members()
        return [process.pid for process in sorted(members, key=lambda p: p.pid != self.processes.driver.pid)]

    @property
    def browser_pid(self) -> int | None:
        """The pid of Chromium's main process."""
        main = self.processes.main()
        return main.pid if main is not None else None

    @property
    def driver_pid(self) -> int:
        """The pid of chromedriver."""
        return self.processes.driver.pid

    def call(self, handle: str, function: Callable[[Any], Any], timeout_s: float | None) -> Any:
        """Run ``function(driver)`` on window ``handle`` (see the module docstring)."""
        with self.lock:
            self.check_alive()
            deadline = self.watchdog.arm(timeout_s, self.id) if timeout_s else None
            try:
                if self._current != handle:
                    self.driver.switch_to.window(handle)
                    self._current = handle
                result = function(self.driver)
            except Exception as error:
                expired = deadline is not None and self.watchdog.disarm(deadline)
                raise self._failure(error, expired, timeout_s) from error
            if deadline is not None and self.watchdog.disarm(deadline):
                raise self._failure(None, True, timeout_s)
            return result

    def check_alive(self) -> None:
        """Raise ``EnvironmentCrashedError`` if this browser died."""
        if self.dead:
            raise EnvironmentCrashedError(f"The Chromium browser is gone ({self.death}); call restart().")
        if not self.processes.alive():
            self.kill("its processes died")
            raise EnvironmentCrashedError(f"The Chromium browser died ({self.death}); call restart().")

    def _failure(self, error: Exception | None, expired: bool, timeout_s: float | None) -> Exception:
        """The environment error that ``error`` (raised by a browser call) means."""
        detail = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}" if error else "no error"
        if expired:
            self.kill(f"a call ran past {timeout_s} s")
            return EnvironmentTimeoutError(f"A Chromium call ran past {timeout_s} s; the browser was killed; call restart().")
        if self.dead or not self.processes.alive():
            self.kill(f"died during a call ({detail})")
            return EnvironmentCrashedError(f"The Chromium browser died ({detail}); call restart().")
        if "tab crashed" in detail or "page crash" in detail:
            return EnvironmentCrashedError(f"The page's renderer crashed ({detail}); restart() opens a fresh window.")
        return EnvironmentCrashedError(f"The MiniWoB page failed ({detail}); call restart().")

    def open_window(self, timeout_s: float) -> str:
        """A new window (the browser's first window is used first); returns its handle."""

        def open_one(driver: Any) -> str:
            if self._current not in self.windows and self.windows:  # the driver's window was closed
                driver.switch_to.window(min(self.windows))
            driver.switch_to.new_window("window")
            return driver.current_window_handle

        with self.lock:
            if self.spares:
                handle = self.spares.pop()
            else:
                self.check_alive()
                deadline = self.watchdog.arm(timeout_s, self.id)
                try:
                    handle = open_one(self.driver)
                except Exception as error:
                    raise self._failure(error, self.watchdog.disarm(deadline), timeout_s) from error
                if self.watchdog.disarm(deadline):
                    raise self._failure(None, True, timeout_s)
                self._current = handle
            self.windows.add(handle)
            return handle

    def close_window(self, handle: str, timeout_s: float) -> None:
        """Close window ``handle`` (the browser stays); errors are logged: the window goes."""
        with self.lock:
            self.windows.discard(handle)
            if self.dead:
                return
            try:
                self.call(handle, lambda driver: driver.close(), timeout_s)
            except EnvironmentCrashedError as error:
                logger.debug("Closing a window of browser %d failed: %s", self.id, error)
            self._current = None

    def keep_window(self, handle: str, timeout_s: float) -> None:
        """Give window ``handle`` back without closing it (``BrowserSettings.idle_browsers``):
        it shows a blank page (the task's scripts stop) and is a spare the next
        ``open_window`` takes (opening a window costs about 0.25 s; the next environment
        loads its task page anyway). A window that fails to blank is dropped."""
        with self.lock:
            self.windows.discard(handle)
            if self.dead:
                return
            try:
                self.call(handle, lambda driver: driver.get("about:blank"), timeout_s)
            except EnvironmentCrashedError as error:
                logger.debug("Keeping a window of browser %d failed: %s", self.id, error)
                return
            self.spares.append(handle)

    def kill(self, reason: str = "closed") -> None:
        """Quit and kill every process of this browser (idempotent)."""
        if self.processes is None:
            return
        if not self.dead:
            self.dead, self.death = True, reason
            logger.debug("Browser %d: %s", self.id, reason)
        self.windows.clear()
        self.spares.clear()
        self.processes.kill()
        browser_reaper().forget(self.processes.marker)
        process = getattr(self.service, "process", None)
        if process is not None:
            try:
                process.wait(timeout=5)
            except (subprocess.TimeoutExpired, OSError):
                pass

    def quit(self, timeout_s: float = 10.0) -> None:
        """End the browser: a polite ``quit`` (bounded by ``timeout_s``), then ``kill``."""
        if not self.dead and self.processes.alive():
            finished = threading.Event()

            def polite_quit() -> None:
                try:
                    self.driver.quit()
                except Exception as error:  # noqa: BLE001 - the kill below ends it anyway
                    logger.debug("Browser %d: quit failed (%s)", self.id, error)
                finished.set()

            threading.Thread(target=polite_quit, daemon=True, name=f"chromium {self.id} quit").start()
            finished.wait(timeout_s)
        started = time.monotonic()
        self.kill("closed")
        logger.debug("Browser %d ended in %.2f s", self.id, time.monotonic() - started)

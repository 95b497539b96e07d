"""The browsers of this Python process: a bounded pool, and no browser left behind.

Browsers are a resource of the process, not of one environment: ``BrowserPool`` starts at
most ``BrowserSettings.max_browsers`` of them and hands out windows (``Window``), filling a
browser up to ``windows_per_browser`` before it starts the next. An environment holds one
window; closing it closes the window, and closing a browser's last window ends the browser
(driver and Chromium, every pid), so that a closed environment leaves no process behind.

``browser_pool()`` is the pool of this process (a forked child gets a new, empty one: the
parent's browsers are the parent's). ``configure_browsers`` sets its limits; the
defaults come from ``BrowserSettings``, or from the variables ``HINDSIGHT_MAX_BROWSERS``,
``HINDSIGHT_WINDOWS_PER_BROWSER`` and ``HINDSIGHT_IDLE_BROWSERS`` when set (rollout worker
processes inherit them; a Kedro run sets them from ``environment.browsers``).
With ``idle_browsers`` > 0 a browser whose last window closes stays up for the next
environment until ``close_idle_browsers`` (the end of a Kedro run) or exit.

No browser outlives the process: the first browser start registers ``kill_all_browsers``
with ``atexit`` (a normal exit, an exception, Ctrl-C: Python's KeyboardInterrupt unwinds to
it; the browsers run in their own session, so the terminal's SIGINT does not reach them)
and, in the main thread, as a SIGTERM handler that kills them and then lets the signal do
what it did before. The first start also kills the browsers of dead runs of this project
(``dead_runs.orphans_of_dead_runs``: a run killed with SIGKILL, which nothing can catch).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
from dataclasses import replace
from typing import Any, Callable

from hindsight.envs.base import EnvironmentConfigError
from hindsight.envs.miniwob.browser import Browser, BrowserSettings
from hindsight.envs.miniwob.dead_runs import orphans_of_dead_runs
from hindsight.envs.miniwob.processes import kill_processes
from hindsight.envs.miniwob.system import check_chromium
from hindsight.envs.watchdog import CallWatchdog, Deadline

logger = logging.getLogger(__name__)


class Window:
    """One window of a browser, held by one environment (see the module docstring)."""

    def __init__(self, pool: "BrowserPool", browser: Browser, handle: str) -> None:
        self.pool, self.browser, self.handle = pool, browser, handle
        self.closed = False

    def call(self, function: Callable[[Any], Any], timeout_s: float | None) -> Any:
        """``function(driver)`` on this window (errors: ``browser.Browser.call``)."""
        if self.closed:
            raise RuntimeError("This browser window is closed.")
        return self.browser.call(self.handle, function, timeout_s)

    @property
    def alive(self) -> bool:
        """Whether the window's browser still runs."""
        return not self.closed and not self.browser.dead

    def close(self) -> None:
        """Give the window back (idempotent)."""
        if not self.closed:
            self.closed = True
            self.pool.release(self)


ENVIRONMENT_VARIABLES = {
    "max_browsers": "HINDSIGHT_MAX_BROWSERS",
    "windows_per_browser": "HINDSIGHT_WINDOWS_PER_BROWSER",
    "idle_browsers": "HINDSIGHT_IDLE_BROWSERS",
}
"""The ``BrowserSettings`` fields a new pool reads from the environment (when set)."""


def _settings_from_environment() -> BrowserSettings:
    values = {}
    for name, variable in ENVIRONMENT_VARIABLES.items():
        raw = os.environ.get(variable)
        if raw:
            try:
                values[name] = int(raw)
            except ValueError:
                raise EnvironmentConfigError(f"{variable} must be a positive integer, got {raw!r}.") from None
    try:
        return BrowserSettings(**values)
    except ValueError as error:
        raise EnvironmentConfigError(str(error)) from None


class BrowserPool:
    """The bounded browsers of one process (see the module docstring).

    Args:
        settings: Limits and start timeout.
    """

    def __init__(self, settings: BrowserSettings | None = None) -> None:
        self.settings = settings or _settings_from_environment()
        self.pid = os.getpid()
        self.browsers: list[Browser] = []
        self.history: list[Browser] = []
        """Every browser this pool started, dead ones included (``seen_pids``)."""
        self.started = 0
        self._lock = threading.RLock()
        self.watchdog = CallWatchdog(self._expire, "Chromium")

    def _expire(self, deadline: Deadline) -> None:
        for browser in list(self.browsers):
            if browser.id == deadline.generation:
                browser.kill(f"a call ran past {deadline.timeout_s} s")

    def acquire(self, timeout_s: float | None = None) -> Window:
        """A window in a browser with room (started when none has room and the limit allows).

        Raises:
            EnvironmentConfigError: Every allowed browser is full (names both settings).
            EnvironmentCrashedError: A browser failed to start.
        """
        timeout = timeout_s or self.settings.start_timeout_s
        with self._lock:
            self._drop_dead()
            for browser in sorted(self.browsers, key=lambda b: not b.spares):  # a spare window first
                if browser.spares or len(browser.windows) < self.settings.windows_per_browser:
                    return Window(self, browser, browser.open_window(timeout))
            if len(self.browsers) >= self.settings.max_browsers:
                raise EnvironmentConfigError(
                    f"All {self.settings.max_browsers} browsers hold {self.settings.windows_per_browser} windows each: "
                    f"this process asked for more than {self.settings.max_browsers * self.settings.windows_per_browser} "
                    "live MiniWoB environments. Close some, run fewer episodes at once (rollout.max_parallel), or raise "
                    "the limits (configure_browsers, HINDSIGHT_MAX_BROWSERS / HINDSIGHT_WINDOWS_PER_BROWSER)."
                )
            browser = self._start_browser()
            return Window(self, browser, browser.open_window(timeout))

    def _start_browser(self) -> Browser:
        chrome_binary, chromedriver, _ = check_chromium()
        if self.started == 0:
            _install_exit_handlers()
            orphans = orphans_of_dead_runs()
            if orphans:
                logger.warning("Killing %d browser processes left by dead runs: %s", len(orphans), [p.pid for p in orphans])
                kill_processes(orphans)
        browser = Browser(chrome_binary, chromedriver, self.watchdog, self.settings.start_timeout_s)
        self.started += 1
        self.browsers.append(browser)
        self.history.append(browser)
        logger.debug("Started browser %d (driver pid %d, Chromium pid %s)", browser.id, browser.driver_pid, browser.browser_pid)
        return browser

    def _drop_dead(self) -> None:
        for browser in [b for b in self.browsers if b.dead]:
            browser.kill(browser.death)
            self.browsers.remove(browser)

    def release(self, window: Window) -> None:
        """Close ``window`` and end a browser left without windows; with
        ``settings.idle_browsers``, keep the window as a spare instead, and the browser too
        while fewer than ``idle_browsers`` others hold no window."""
        with self._lock:
            browser = window.browser
            keep = self.settings.idle_browsers > 0 and not browser.dead and browser in self.browsers
            if keep and (len(browser.windows) > 1 or len(self._idle(browser)) < self.settings.idle_browsers):
                browser.keep_window(window.handle, self.settings.start_timeout_s)  # a spare for the next environment
                if browser.spares and not browser.dead:
                    return
            elif not browser.dead and len(browser.windows) > 1:
                browser.close_window(window.handle, self.settings.start_timeout_s)
            else:
                browser.windows.discard(window.handle)
            if not browser.windows:
                browser.quit()
                if browser in self.browsers:
                    self.browsers.remove(browser)
            self._drop_dead()

    def _idle(self, *besides: Browser) -> list[Browser]:
        """The living browsers that hold no window, ``besides`` left out."""
        return [b for b in self.browsers if not b.dead and not b.windows and b not in besides]

    def close_idle(self) -> int:
        """End every browser that holds no window (kept by ``settings.idle_browsers``);
        returns how many."""
        with self._lock:
            idle = self._idle()
            for browser in idle:
                browser.quit()
                self.browsers.remove(browser)
            self._drop_dead()
            return len(idle)

    def kill_all(self) -> None:
        """Kill every browser of this pool (at exit; also after a test)."""
        with self._lock:
            for browser in self.browsers:
                browser.kill("the pool was shut down")
            self.browsers.clear()

    def seen_pids(self) -> set[int]:
        """Every pid any browser of this pool was ever seen with (driver, Chromium, renderers)."""
        return set().union(*(browser.processes.seen for browser in self.history))

    @property
    def live_browsers(self) -> int:
        """Browsers alive now."""
        return sum(1 for browser in self.browsers if not browser.dead)


_pool: BrowserPool | None = None
_pool_lock = threading.Lock()


def browser_pool() -> BrowserPool:
    """This process's pool (created on first use; a new one after a fork)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            _pool = BrowserPool()
        return _pool


def configure_browsers(settings: BrowserSettings | None = None, **changes: Any) -> BrowserSettings:
    """Set this process's browser limits (``settings``, or ``changes`` to the current ones,
    e.g. ``configure_browsers(max_browsers=1)``); they apply to the next browser started.
    Returns the settings now in force."""
    pool = browser_pool()
    try:
        pool.settings = replace(settings or pool.settings, **changes)
    except (TypeError, ValueError) as error:
        raise EnvironmentConfigError(f"Bad browser settings: {error}") from None
    return pool.settings


def kill_all_browsers() -> None:
    """Kill every browser this process started (registered with ``atexit``)."""
    if _pool is not None and _pool.pid == os.getpid():
        _pool.kill_all()


def close_idle_browsers() -> int:
    """End this process's browsers that hold no window (``BrowserSettings.idle_browsers``
    keeps them between environments; the run hook calls this at the end of a run)."""
    if _pool is not None and _pool.pid == os.getpid():
        return _pool.close_idle()
    return 0


_handlers_installed = False


def _install_exit_handlers() -> None:
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(kill_all_browsers)
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: Any) -> None:
        kill_all_browsers()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    try:
        signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread of the main interpreter
        pass

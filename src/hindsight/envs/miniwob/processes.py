"""The processes one browser is made of, found by pid and killed as a whole.

A browser here is a chromedriver process and the Chromium it starts: a main browser
process, its zygotes, a GPU and a network process, one renderer per window, and two
crash handlers that detach themselves (they leave the process group and are re-parented to
init). Killing chromedriver alone orphans all of these, so each browser is started

- in a session and process group of its own (``start_new_session``): a Ctrl-C in a
  terminal reaches Python only, and ``kill`` reaches every process still in the group;
- with a marker in every command line: a fresh ``--user-data-dir`` and ``HOME`` under a
  directory named ``hindsight-chromium-<python pid>-...``, which Chromium passes to its
  children (the crash handlers write under ``HOME``), so a process that left the group is
  still found by its command line.

``BrowserProcesses.members()`` is the union of the driver's process tree, the group and the
marked processes (zombies excluded: they are dead, only not yet reaped). ``kill()`` sends
SIGKILL to all of them until none is left. ``orphans_of_dead_runs()`` finds the marked
processes whose Python process is gone (a run killed with SIGKILL, which no handler sees):
the next browser start kills them. ``marked_processes(pid)`` lists what a given Python
process left running (the tests count them by pid before and after).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass, field

import psutil

logger = logging.getLogger(__name__)

MARKER_PREFIX = "hindsight-chromium-"
"""Start of the name of each browser's directory (``<prefix><python pid>-<random>``)."""
_MARKER_PATTERN = re.compile(re.escape(MARKER_PREFIX) + r"(\d+)-")
PROCESS_NAMES = ("chromium", "chrome", "chromedriver", "chrome_crashpad_handler", "headless_shell")
"""Names of the processes a browser is made of (``psutil.Process.name()``, which Linux cuts
to 15 characters)."""


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _command_line(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def is_browser_process(process: psutil.Process) -> bool:
    """Whether ``process`` is a living Chromium or chromedriver process."""
    try:
        name = process.name()
    except psutil.Error:
        return False
    return any(name.startswith(known[:15]) for known in PROCESS_NAMES) and _alive(process)


def _marked(python_pid: int | None = None) -> list[tuple[psutil.Process, int]]:
    """(process, owner pid) of every living browser process whose command line carries a
    marker of ``python_pid`` (any Python process when None), by pid. The command line is read
    once: a process may exit between two reads."""
    found = []
    for process in psutil.process_iter():
        if not is_browser_process(process):
            continue
        match = _MARKER_PATTERN.search(_command_line(process))
        if match and (python_pid is None or int(match.group(1)) == python_pid):
            found.append((process, int(match.group(1))))
    return sorted(found, key=lambda pair: pair[0].pid)


def marked_processes(python_pid: int | None = None) -> list[psutil.Process]:
    """Living browser processes whose command line carries a marker of ``python_pid`` (any
    Python process when None), by pid."""
    return [process for process, _ in _marked(python_pid)]


def orphans_of_dead_runs() -> list[psutil.Process]:
    """Marked browser processes whose Python process no longer runs."""
    return [process for process, owner in _marked() if not psutil.pid_exists(owner) or owner == process.pid]


def kill_processes(processes: list[psutil.Process], timeout_s: float = 10.0) -> list[int]:
    """SIGKILL every process of ``processes`` still alive and wait until they are gone (or
    zombies). Returns the pids that were still alive and killed."""
    killed = []
    for process in processes:
        if _alive(process):
            try:
                process.send_signal(signal.SIGKILL)
                killed.append(process.pid)
            except psutil.Error:
                pass
    deadline = time.monotonic() + timeout_s
    while any(_alive(process) for process in processes) and time.monotonic() < deadline:
        time.sleep(0.01)
    return killed


@dataclass
class BrowserProcesses:
    """The processes of one browser (see the module docstring).

    Args:
        driver: The chromedriver process (a child of this Python process).
        marker: The browser's directory (user data and ``HOME``); removed by ``kill``.
    """

    driver: psutil.Process
    marker: str
    seen: set[int] = field(default_factory=set)
    """Every pid ever found in this browser (for the log and the tests)."""
    _main: psutil.Process | None = None

    @property
    def group(self) -> int:
        """The process group (and session) the browser runs in: the driver's pid."""
        return self.driver.pid

    def main(self) -> psutil.Process | None:
        """Chromium's main browser process (the driver's child without ``--type=``)."""
        if self._main is None:
            try:
                children = self.driver.children()
            except psutil.Error:
                children = []
            for child in children:
                line = _command_line(child)
                if "--type=" not in line and self.marker in line:
                    self._main = child
                    break
        return self._main

    def members(self) -> list[psutil.Process]:
        """Every living process of this browser, by pid."""
        found: dict[int, psutil.Process] = {}
        roots = [self.driver] + ([self._main] if self._main is not None else [])
        for root in roots:
            if _alive(root):
                found[root.pid] = root
                try:
                    found.update({child.pid: child for child in root.children(recursive=True)})
                except psutil.Error:
                    pass
        for process in psutil.process_iter():
            if process.pid in found or not is_browser_process(process):
                continue
            try:
                in_group = os.getpgid(process.pid) == self.group
            except OSError:
                in_group = False
            if in_group or self.marker in _command_line(process):
                found[process.pid] = process
        members = [process for process in found.values() if _alive(process)]
        self.seen.update(process.pid for process in members)
        return sorted(members, key=lambda process: process.pid)

    def alive(self) -> bool:
        """Whether the driver and Chromium's main process both still run."""
        main = self.main()
        return _alive(self.driver) and main is not None and _alive(main)

    def kill(self) -> list[int]:
        """Kill every process of the browser, reap the driver, remove the marker directory.
        Returns the pids killed."""
        self.main()  # remember the main process while the driver can still name it
        killed = kill_processes(self.members())
        try:
            os.killpg(self.group, signal.SIGKILL)  # anything started in the group meanwhile
        except OSError:
            pass
        for _ in range(3):  # a process forked during the first sweep
            rest = self.members()
            if not rest:
                break
            killed += kill_processes(rest)
        try:
            os.waitpid(self.driver.pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass
        shutil.rmtree(self.marker, ignore_errors=True)
        if killed:
            logger.debug("Killed browser processes %s", killed)
        return killed

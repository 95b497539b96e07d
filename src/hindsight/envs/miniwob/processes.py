"""The processes one browser is made of, found by pid and killed as a whole, also after
the Python process that started them was killed.

A browser here is a chromedriver process and the Chromium it starts: a main browser
process, its zygotes, a GPU and a network process, one renderer per window, and two
crash handlers that detach themselves (they leave the process group and are re-parented to
init). Killing chromedriver alone orphans all of these, so each browser is started

- in a session and process group of its own (``start_new_session``): a Ctrl-C in a
  terminal reaches Python only, and ``kill`` reaches every process still in the group;
- with a marker: a fresh directory ``<temp>/hindsight-chromium-<python pid>-<start>-...``
  (``new_marker``; ``<start>`` is the Python process's start time in clock ticks, so a
  reused pid is not taken for the owner) that is Chromium's ``--user-data-dir`` parent and
  the ``HOME``, ``TMPDIR`` and ``HINDSIGHT_BROWSER_DIR`` of chromedriver and every process
  it starts. Chromium's own temporary files (``org.chromium.Chromium.*``) land in it, and
  a process that left the group is still found: by its command line (Chromium's processes
  carry ``--user-data-dir``; the zygote's children overwrite their environment with their
  title) or by its environment (chromedriver, whose command line names no directory).

``BrowserProcesses.members()`` is the union of the driver's process tree, the group and the
marked processes (zombies excluded: they are dead, only not yet reaped). ``kill()`` sends
SIGKILL to all of them until none is left and removes the directory.

The reaper (``reaper.BrowserReaper``) runs this file as a script: ``reap_when_parent_exits``
reads the parent's living browsers from a pipe and, at end-of-file (the parent is gone),
kills every browser still listed (``kill_browser``) and removes its directory.

What a reaper cannot do (it was killed too, or the machine rebooted) the next browser start
does (``dead_runs.clean_up_dead_runs``). ``marked_processes(pid)`` lists the browser
processes a given Python process left (the tests count them by pid before and after).

This module imports nothing of ``hindsight``: the reaper runs it as a script.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

import psutil

logger = logging.getLogger(__name__)

MARKER_PREFIX = "hindsight-chromium-"
"""Start of the name of each browser's directory (``<prefix><python pid>-<start>-<random>``;
directories of older versions lack ``<start>-``)."""
MARKER_VARIABLE = "HINDSIGHT_BROWSER_DIR"
"""The environment variable that holds a browser's directory in chromedriver and Chromium."""
_MARKER_PATTERN = re.compile(re.escape(MARKER_PREFIX) + r"(\d+)-(?:(\d+)-)?")
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


def _marker_text(process: psutil.Process) -> str:
    """Where a process carries its browser's marker: its command line, else the marker
    variables of its environment (chromedriver's command line names no directory)."""
    line = _command_line(process)
    if MARKER_PREFIX in line:
        return line
    try:
        environment = process.environ()
    except psutil.Error:
        return line
    return " ".join([line, environment.get(MARKER_VARIABLE, ""), environment.get("HOME", "")])


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat``); None
    where it cannot be read (no such process, no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[19])  # field 22 of proc(5); the first two fields precede ")"
    except (OSError, IndexError, ValueError):
        return None


def new_marker() -> str:
    """A fresh browser directory of this Python process (created, private to this user)."""
    pid = os.getpid()
    ticks = start_ticks(pid)
    owner = f"{pid}-{ticks}-" if ticks is not None else f"{pid}-"
    return tempfile.mkdtemp(prefix=f"{MARKER_PREFIX}{owner}")


def marker_owner(text: str) -> tuple[int, int | None] | None:
    """(pid, start ticks or None) of the Python process named by the first marker in ``text``."""
    match = _MARKER_PATTERN.search(text)
    if match is None:
        return None
    return int(match.group(1)), (int(match.group(2)) if match.group(2) else None)


def is_browser_process(process: psutil.Process) -> bool:
    """Whether ``process`` is a living Chromium or chromedriver process."""
    try:
        name = process.name()
    except psutil.Error:
        return False
    return any(name.startswith(known[:15]) for known in PROCESS_NAMES) and _alive(process)


def _running_processes() -> Iterator[psutil.Process]:
    """A fresh handle on every process now running. Not ``psutil.process_iter``: it hands back
    the handle it cached for a pid, and when that pid has since been reused by another process
    (a browser started after the last call) the handle reads as not running for that one call,
    so the browser would be missed."""
    for pid in psutil.pids():
        try:
            yield psutil.Process(pid)
        except psutil.Error:  # gone since the listing
            continue


def marked_with_owners(python_pid: int | None = None) -> list[tuple[psutil.Process, tuple[int, int | None]]]:
    """(process, owner) of every living browser process that carries a marker of
    ``python_pid`` (any Python process when None), by pid. The marker is read once: a
    process may exit between two reads."""
    found = []
    for process in _running_processes():
        if not is_browser_process(process):
            continue
        owner = marker_owner(_marker_text(process))
        if owner is not None and (python_pid is None or owner[0] == python_pid):
            found.append((process, owner))
    return sorted(found, key=lambda pair: pair[0].pid)


def marked_processes(python_pid: int | None = None) -> list[psutil.Process]:
    """Living browser processes that carry a marker of ``python_pid`` (any Python process
    when None) in their command line or environment, by pid."""
    return [process for process, _ in marked_with_owners(python_pid)]


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


def _browser_processes(marker: str, group: int) -> dict[int, psutil.Process]:
    """Living browser processes in process group ``group`` (0: none) or carrying ``marker``."""
    found = {}
    for process in _running_processes():
        if not is_browser_process(process):
            continue
        try:
            in_group = group > 0 and os.getpgid(process.pid) == group
        except OSError:
            in_group = False
        if in_group or marker in _marker_text(process):
            found[process.pid] = process
    return found


def kill_browser(marker: str, group: int = 0) -> list[int]:
    """Kill every process of the browser with directory ``marker`` and process group
    ``group`` (when known), then remove the directory. Returns the pids killed."""
    killed = []
    for _ in range(4):  # a process forked during a sweep
        rest = list(_browser_processes(marker, group).values())
        if not rest:
            break
        killed += kill_processes(rest)
    shutil.rmtree(marker, ignore_errors=True)
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
        for pid, process in _browser_processes(self.marker, self.group).items():
            found.setdefault(pid, process)
        members = [process for process in found.values() if _alive(process)]
        self.seen.update(process.pid for process in members)
        return sorted(members, key=lambda process: process.pid)

    def alive(self) -> bool:
        """Whether the driver and Chromium's main process both still run."""
        main = self.main()
        return _alive(self.driver) and main is not None and _alive(main)

    def kill(self) -> list[int]:
        """Kill every process of the browser, reap the driver and remove the marker
        directory (its owner tells the reaper, ``reaper.BrowserReaper.forget``). Returns the
        pids killed."""
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


def reap_when_parent_exits(stream: BinaryIO) -> None:
    """The reaper's loop: read ``+/-<TAB>group<TAB>directory`` lines until end-of-file (the
    parent is gone), then kill every browser still listed and remove its directory."""
    for name in ("SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    watched: dict[str, int] = {}
    for raw in stream:
        parts = raw.decode(errors="replace").rstrip("\n").split("\t", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        sign, group, marker = parts
        if sign == "+":
            watched[marker] = int(group)
        else:
            watched.pop(marker, None)
    for marker, group in watched.items():
        kill_browser(marker, group)


if __name__ == "__main__":
    reap_when_parent_exits(sys.stdin.buffer)

"""What dead runs left of their browsers, found and removed at the next browser start.

A run killed with its reaper (or a machine rebooted) leaves browser processes and
directories that carry its marker (``processes.new_marker``: ``<temp>/hindsight-chromium-
<python pid>-<start>-...``). ``clean_up_dead_runs()`` kills the marked processes whose Python
process is gone (``orphans_of_dead_runs``) and removes the directories of dead owners
(``leftover_directories``: only ``hindsight-chromium-*`` directories of this user whose owner
no longer runs; a reused pid with another start time is not the owner).
``marked_directories(pid)`` lists what a given Python process left (the tests count them).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

import psutil

from hindsight.envs.miniwob.processes import MARKER_PREFIX, kill_processes, marked_with_owners, marker_owner, start_ticks

logger = logging.getLogger(__name__)


def _owner_alive(owner: tuple[int, int | None]) -> bool:
    """Whether the Python process ``owner`` still runs (a reused pid with another start time
    does not count)."""
    pid, ticks = owner
    if not psutil.pid_exists(pid):
        return False
    now = start_ticks(pid)
    return ticks is None or now is None or now == ticks


def orphans_of_dead_runs() -> list[psutil.Process]:
    """Marked browser processes whose Python process no longer runs."""
    return [process for process, owner in marked_with_owners() if owner[0] == process.pid or not _owner_alive(owner)]


def marked_directories(python_pid: int | None = None) -> list[str]:
    """This user's browser directories in the temporary directory (of ``python_pid`` only,
    unless None), sorted."""
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(root, name)
        owner = marker_owner(name) if name.startswith(MARKER_PREFIX) else None
        if owner is None or (python_pid is not None and owner[0] != python_pid):
            continue
        try:
            if os.path.isdir(path) and not os.path.islink(path) and os.stat(path).st_uid == os.getuid():
                found.append(path)
        except OSError:
            pass
    return sorted(found)


def leftover_directories() -> list[str]:
    """Browser directories of this user whose Python process no longer runs."""
    return [path for path in marked_directories() if not _owner_alive(marker_owner(os.path.basename(path)))]


def clean_up_dead_runs() -> tuple[list[int], list[str]]:
    """Kill the browser processes of dead runs, then remove their directories (see the
    module docstring). Returns (pids killed, directories removed)."""
    orphans = orphans_of_dead_runs()
    killed = kill_processes(orphans)
    removed = leftover_directories()
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    if killed or removed:
        logger.warning("Cleaned up after dead runs: killed browser processes %s, removed %d browser directories", killed, len(removed))
    return killed, removed

"""The reaper: a process that kills this Python process's browsers once it is gone.

Nothing runs in a process killed with SIGKILL (the OOM killer's signal), and a parent-death
signal (``PR_SET_PDEATHSIG``) follows the *thread* that forked, not the process: a browser
started by a worker thread would die with that thread. So every Python process that starts a
browser also starts one ``BrowserReaper``: a small Python process (``processes.py`` run as a
script, stdlib and psutil only, in a session of its own) that reads, from a pipe only its
parent holds, the directories and groups of the parent's living browsers (``watch`` adds one,
``forget`` drops it). When the parent exits, however it exits and from whichever thread the
browsers came, the kernel closes the pipe; the reaper reads end-of-file, kills every browser
still listed (``processes.kill_browser``), removes their directories and exits (in about
0.1 s). A child made by ``fork`` closes its copy of the pipe (``os.register_at_fork``), so a
forked worker does not keep its parent's browsers alive.

A reaper that died is replaced at the next ``watch`` or ``forget`` and told every browser
watched then. What no reaper could clean (it was killed too) the next browser start does
(``dead_runs.clean_up_dead_runs``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

logger = logging.getLogger(__name__)


_REAPER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "processes.py")
"""The file the reaper runs (``processes.reap_when_parent_exits``)."""
_REAPER_LAUNCH = "import runpy, sys; sys.path = [path for path in sys.path if path]; runpy.run_path(sys.argv[1], run_name='__main__')"
"""How the reaper runs ``processes.py``: as a script, with neither its folder nor the working
directory on ``sys.path`` (their modules would shadow others of the same name)."""


class BrowserReaper:
    """The process that kills this Python process's browsers once it is gone (see the
    module docstring). One per Python process: ``browser_reaper()``."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.process: subprocess.Popen | None = None
        self._pipe: int | None = None
        self._watched: dict[str, int] = {}
        self._lock = threading.RLock()  # re-entrant: a SIGTERM handler kills browsers too

    def watch(self, marker: str, group: int = 0) -> None:
        """Kill the browser of directory ``marker`` (and of process group ``group``, when
        known) if this process ends before ``forget(marker)``."""
        with self._lock:
            self._watched[marker] = group
            self._send(f"+\t{group}\t{marker}\n")

    def forget(self, marker: str) -> None:
        """The browser of ``marker`` is gone: nothing to kill any more."""
        with self._lock:
            if self._watched.pop(marker, None) is not None:
                self._send(f"-\t0\t{marker}\n")

    def _send(self, line: str) -> None:
        if self._pipe is not None and self.process is not None and self.process.poll() is None:
            try:
                os.write(self._pipe, line.encode())
                return
            except OSError:  # the reaper died meanwhile
                pass
        if self._watched:
            try:
                self._start()
            except OSError as error:  # the browsers run on; the next start cleans up after a SIGKILL
                logger.warning("No browser reaper could start (%s): a SIGKILL of this process would leave its browsers", error)

    def _start(self) -> None:
        """Start a reaper and tell it every browser watched now (after a reaper's death too)."""
        self.close()
        read_end, write_end = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _REAPER_LAUNCH, _REAPER_SCRIPT, str(self.pid)],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self._pipe = write_end
        lines = "".join(f"+\t{group}\t{marker}\n" for marker, group in self._watched.items())
        os.write(self._pipe, lines.encode())
        logger.debug("Browser reaper started (pid %d)", self.process.pid)

    def close(self) -> None:
        """Close the pipe: the reaper kills what is still watched and exits."""
        if self._pipe is not None:
            try:
                os.close(self._pipe)
            except OSError:
                pass
            self._pipe = None


_reaper: BrowserReaper | None = None
_reaper_lock = threading.Lock()


def browser_reaper() -> BrowserReaper:
    """This process's reaper (its process starts with the first browser watched)."""
    global _reaper
    with _reaper_lock:
        if _reaper is None or _reaper.pid != os.getpid():
            _reaper = BrowserReaper()
        return _reaper


def _forget_the_parents_reaper() -> None:
    """In a forked child: close the parent's pipe (the child's own reaper starts with its
    first browser)."""
    global _reaper, _reaper_lock
    _reaper_lock = threading.Lock()  # a copy held by another thread of the parent stays held
    if _reaper is not None:
        _reaper.close()
        _reaper = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_the_parents_reaper)

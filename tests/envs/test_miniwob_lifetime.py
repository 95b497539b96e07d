"""What keeps a browser from outliving its Python process, without a browser: stand-in
processes named ``chromedriver`` and ``chromium`` (copies of ``sleep``) carry a browser's
marker the way the real ones do (in their environment, in the driver's process group), and
the tests count them by pid.

- A Python process SIGKILLed while it holds two stand-in browsers, one registered from a
  worker thread that has since ended, leaves none of their processes and none of their
  directories within 10 s (its ``BrowserReaper`` acts on the closed pipe);
- so does one that had forked a child still running (the child closed its copy of the pipe);
- a reaper that died is replaced at the next ``watch`` and told every browser again;
- the clean-up at a browser start removes only the directories of this project whose owner
  no longer runs (a reused pid with another start time is not the owner), and finds
  chromedriver, whose marker is in its environment only.

tests/envs/test_miniwob_lifetime_browsers.py does the same with Chromium (``-m slow``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from hindsight.envs.miniwob import dead_runs
from hindsight.envs.miniwob.dead_runs import leftover_directories, marked_directories, orphans_of_dead_runs
from hindsight.envs.miniwob.processes import MARKER_PREFIX, MARKER_VARIABLE, marked_processes, start_ticks
from hindsight.envs.miniwob.reaper import BrowserReaper
from miniwob_checks import living, wait_until

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import os, subprocess, sys, threading, time
    from hindsight.envs.miniwob.processes import MARKER_VARIABLE, new_marker
    from hindsight.envs.miniwob.reaper import browser_reaper
    stand_ins, how = sys.argv[1], sys.argv[2]
    pids = []

    def start_browser():
        marker = new_marker()
        browser_reaper().watch(marker)  # as Browser._start: before the driver starts
        environment = {**os.environ, "HOME": marker, MARKER_VARIABLE: marker}
        driver = subprocess.Popen([os.path.join(stand_ins, "chromedriver"), "600"], env=environment, start_new_session=True)
        browser_reaper().watch(marker, driver.pid)
        # a crash handler that left the driver's group: found by its environment only
        handler = subprocess.Popen([os.path.join(stand_ins, "chromium"), "600"], env=environment, start_new_session=True)
        pids.extend([driver.pid, handler.pid])

    start_browser()
    worker = threading.Thread(target=start_browser)
    worker.start()
    worker.join()  # the thread that started the second browser is gone
    forked = os.fork() if how == "fork" else -1
    if forked == 0:
        time.sleep(600)  # a forked child outlives its parent (the test kills it)
        os._exit(0)
    print(" ".join(map(str, pids)), browser_reaper().process.pid, forked, flush=True)
    time.sleep(600)
    """
)


@pytest.fixture()
def stand_ins(tmp_path: Path) -> Path:
    """A folder with ``chromedriver`` and ``chromium``: copies of ``sleep`` (their process
    names are those of a browser's processes)."""
    sleep = shutil.which("sleep")
    for name in ("chromedriver", "chromium"):
        shutil.copy(sleep, tmp_path / name)
    return tmp_path




def sigkill_child_holding_two_browsers(stand_ins: Path, how: str, tmp_path: Path) -> tuple[int, set[int], int, int]:
    """Start the child script, read its pids, SIGKILL it. Returns (child pid, stand-in
    pids, reaper pid, forked child's pid or -1)."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen([sys.executable, str(script), str(stand_ins), how], stdout=subprocess.PIPE, text=True, env=environment)
    try:
        *pids, reaper, forked = [int(pid) for pid in child.stdout.readline().split()]
        assert len(pids) == 4 and living(set(pids)) == set(pids)
        assert {process.pid for process in marked_processes(child.pid)} == set(pids)  # the driver by its environment
        assert len(marked_directories(child.pid)) == 2
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    return child.pid, set(pids), reaper, forked


def remove_what_is_left(pid: int, *others: int) -> None:
    """Kill what a failed test left of Python process ``pid`` (and ``others``)."""
    for process in marked_processes(pid):
        process.kill()
    for path in marked_directories(pid):
        shutil.rmtree(path, ignore_errors=True)
    for other in others:
        if other > 0 and living({other}):
            os.kill(other, signal.SIGKILL)


@pytest.mark.parametrize("how", ["plain", "fork"])
def test_a_sigkilled_process_leaves_no_browser_process_and_no_directory(how, stand_ins, tmp_path):
    pid, pids, reaper, forked = sigkill_child_holding_two_browsers(stand_ins, how, tmp_path)
    try:
        if how == "fork":
            assert living({forked}) == {forked}  # it holds no copy of the reaper's pipe
        seconds = wait_until(lambda: not living(pids) and not marked_directories(pid) and not marked_processes(pid))
        assert seconds < 10
        wait_until(lambda: not living({reaper}))  # its work done, the reaper exits
    finally:
        remove_what_is_left(pid, forked, reaper)


def test_a_dead_reaper_is_replaced_and_told_every_browser(stand_ins, tmp_path):
    reaper = BrowserReaper()
    markers, pids = [], []
    try:
        for _ in range(2):
            marker = tempfile.mkdtemp(prefix=f"{MARKER_PREFIX}{os.getpid()}-", dir=tmp_path)
            driver = subprocess.Popen([str(stand_ins / "chromedriver"), "600"], env={MARKER_VARIABLE: marker}, start_new_session=True)
            markers.append(marker)
            pids.append(driver.pid)
            reaper.watch(marker, driver.pid)
            if len(markers) == 1:
                first = reaper.process
                first.kill()
                first.wait()
        assert reaper.process is not first and reaper.process.poll() is None
        reaper.forget("never watched")  # nothing to tell
        reaper.close()  # as at this process's exit: the reaper kills both
        wait_until(lambda: not living(set(pids)) and not any(os.path.exists(marker) for marker in markers))
        reaper.process.wait(timeout=10)
    finally:
        reaper.close()
        for pid in pids:
            if living({pid}):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def dead_pid() -> int:
    """The pid of a process that has ended."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid


def test_only_this_projects_directories_of_dead_owners_are_leftovers(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    me, ticks, gone = os.getpid(), start_ticks(os.getpid()), dead_pid()
    names = {
        "mine": f"{MARKER_PREFIX}{me}-{ticks}-abcd1234",
        "mine, older format": f"{MARKER_PREFIX}{me}-abcd1234",
        "dead owner": f"{MARKER_PREFIX}{gone}-{ticks}-abcd1234",
        "dead owner, older format": f"{MARKER_PREFIX}{gone}-abcd1234",
        "my pid, another start": f"{MARKER_PREFIX}{me}-{ticks + 1}-abcd1234",
        "another program": "org.chromium.Chromium.abcd12",
        "not a marker": f"{MARKER_PREFIX}x-abcd1234",
    }
    for name in names.values():
        (tmp_path / name).mkdir()
    (tmp_path / f"{MARKER_PREFIX}{gone}-1-file").write_text("a file, not a browser's directory")
    expected = {names[key] for key in ("dead owner", "dead owner, older format", "my pid, another start")}
    assert {os.path.basename(path) for path in leftover_directories()} == expected
    assert {os.path.basename(path) for path in marked_directories(me)} == {names[key] for key in ("mine", "mine, older format", "my pid, another start")}
    monkeypatch.setattr(dead_runs, "orphans_of_dead_runs", lambda: [])
    assert {os.path.basename(path) for path in dead_runs.clean_up_dead_runs()[1]} == expected
    assert set(os.listdir(tmp_path)) == set(names.values()) - expected | {f"{MARKER_PREFIX}{gone}-1-file"}


def test_the_clean_up_finds_a_driver_by_its_environment(stand_ins, tmp_path):
    gone = dead_pid()
    marker = str(tmp_path / f"{MARKER_PREFIX}{gone}-{start_ticks(os.getpid())}-abcd1234")
    driver = subprocess.Popen([str(stand_ins / "chromedriver"), "600"], env={MARKER_VARIABLE: marker, "HOME": marker}, start_new_session=True)
    try:
        assert driver.pid in {process.pid for process in orphans_of_dead_runs()}
        assert [process.pid for process in marked_processes(gone)] == [driver.pid]
        killed, _ = dead_runs.clean_up_dead_runs()
        assert driver.pid in killed and driver.wait(timeout=10) == -signal.SIGKILL
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def test_a_browser_on_a_reused_pid_is_found(stand_ins, tmp_path):
    """psutil.process_iter keeps one handle per pid; once that pid belongs to a new process, the
    old handle reads as not running for one call. A browser started on a reused pid must still
    be found (seen once in the suite: the fork test above missed one of its four processes)."""
    gone = dead_pid()
    marker = str(tmp_path / f"{MARKER_PREFIX}{gone}-{start_ticks(os.getpid())}-abcd1234")
    driver = subprocess.Popen([str(stand_ins / "chromedriver"), "600"], env={MARKER_VARIABLE: marker, "HOME": marker}, start_new_session=True)
    try:
        earlier = psutil.Process(driver.pid)  # a handle as if on an earlier process of the same pid
        earlier._ident = (driver.pid, earlier.create_time() - 1.0)
        psutil.process_iter.cache_clear()
        psutil._pmap[driver.pid] = earlier
        assert driver.pid not in {process.pid for process in psutil.process_iter() if process.is_running()}  # the hazard
        assert [process.pid for process in marked_processes(gone)] == [driver.pid]
    finally:
        psutil.process_iter.cache_clear()
        driver.kill()
        driver.wait()

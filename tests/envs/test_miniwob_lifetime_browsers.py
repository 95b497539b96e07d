"""No browser outlives its run, with Chromium (``-m slow``: each test starts browsers in a
fresh Python process, 10-40 s on 2 shared cores).

- A Python process holding two environments (two browsers, one started from a worker
  thread that has ended) is SIGKILLed: within 10 s no process of either browser (driver,
  Chromium, renderers, crash handlers) and none of their directories is left.
- The same with its reaper killed first (nothing acts at its death): what it left, its
  chromedriver included, is killed and removed by the clean-up of the next browser start.
- A ``kedro run --env miniwob`` SIGKILLed while it plays its gold episodes leaves nothing
  either (counted for the run's process and every process under it).
- A crashed renderer (its processes killed) costs the episode it was in; the next
  ``reset()`` plays on in a fresh window.

Counted by pid and by marker (``marked_processes``, ``marked_directories``): browsers of other
processes are never counted. tests/envs/test_miniwob_lifetime.py checks the same machinery
without a browser.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from hindsight.envs import EnvironmentCrashedError, EnvironmentSpec, make_env
from hindsight.envs.miniwob.dead_runs import clean_up_dead_runs, marked_directories
from hindsight.envs.miniwob.processes import marked_processes
from miniwob_checks import living, no_browser_left, wait_until  # noqa: F401  (fixture)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipelines"))
from kedro_project import PROJECT_ROOT, KedroProject  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]

ROOT = Path(__file__).resolve().parents[2]
CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from hindsight.envs import EnvironmentSpec, make_env
    from hindsight.envs.miniwob.pool import configure_browsers
    from hindsight.envs.miniwob.reaper import browser_reaper
    configure_browsers(windows_per_browser=1)  # two environments, two browsers
    envs = [make_env(EnvironmentSpec("miniwob", "click-test"))]
    envs[0].reset(0, "train")

    def make_one():
        env = make_env(EnvironmentSpec("miniwob", "click-test"))
        env.reset(1, "train")
        envs.append(env)

    worker = threading.Thread(target=make_one)
    worker.start()
    worker.join()  # the thread that started the second browser is gone
    if sys.argv[1] == "reaper killed":
        browser_reaper().process.kill()
        browser_reaper().process.wait()
    print(" ".join(str(pid) for env in envs for pid in env.page.window.browser.pids), flush=True)
    time.sleep(600)
    """
)




def left_by(pids: list[int]) -> tuple[list[psutil.Process], list[str]]:
    """The browser processes and directories that Python processes ``pids`` left."""
    return [p for pid in pids for p in marked_processes(pid)], [d for pid in pids for d in marked_directories(pid)]


def remove_what_is_left(pids: list[int]) -> None:
    """Kill what a failed test left of Python processes ``pids``."""
    processes, directories = left_by(pids)
    for process in processes:
        process.kill()
    for path in directories:
        shutil.rmtree(path, ignore_errors=True)


def sigkill_child_holding_two_browsers(how: str, tmp_path: Path) -> tuple[int, set[int]]:
    """Start the child script, read its browsers' pids, SIGKILL it. Returns (child pid, pids)."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen([sys.executable, str(script), how], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    try:
        pids = {int(pid) for pid in child.stdout.readline().split()}
        assert len(pids) >= 20, child.stderr.read()  # two browsers of about 12 processes each
        assert {process.pid for process in marked_processes(child.pid)} == living(pids)  # chromedriver too
        assert len(marked_directories(child.pid)) == 2
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stderr.close()
    return child.pid, pids


def test_a_sigkilled_process_holding_two_browsers_leaves_nothing(tmp_path):
    pid, pids = sigkill_child_holding_two_browsers("plain", tmp_path)
    try:
        seconds = wait_until(lambda: not living(pids) and left_by([pid]) == ([], []))
        print(f"{len(pids)} processes and 2 directories gone {seconds:.1f} s after the SIGKILL")
    finally:
        remove_what_is_left([pid])


def test_the_next_start_cleans_up_a_run_whose_reaper_died_too(tmp_path):
    pid, pids = sigkill_child_holding_two_browsers("reaper killed", tmp_path)
    try:
        time.sleep(1.0)
        processes, directories = left_by([pid])
        assert len(processes) >= 20 and len(directories) == 2  # nothing acted at its death
        drivers = {p.pid for p in processes if p.name() == "chromedriver"}  # marked by their environment only
        assert len(drivers) == 2
        killed, removed = clean_up_dead_runs()  # what the next browser start does first
        assert drivers <= set(killed) and set(directories) <= set(removed)
        assert left_by([pid]) == ([], []) and living(pids) == set()
    finally:
        remove_what_is_left([pid])


def kedro_run_tree(run: subprocess.Popen) -> list[int]:
    """The pids of ``run`` and of every process under it."""
    try:
        return [run.pid] + [child.pid for child in psutil.Process(run.pid).children(recursive=True)]
    except psutil.Error:
        return [run.pid]


def test_a_sigkilled_kedro_run_leaves_no_browser(tmp_path):
    project = KedroProject(tmp_path / "project")
    shutil.copytree(PROJECT_ROOT / "conf" / "miniwob", project.path / "conf" / "miniwob")
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "KEDRO_DISABLE_TELEMETRY": "1"}
    with open(tmp_path / "run.log", "w") as log:
        run = subprocess.Popen([sys.executable, "-m", "kedro", "run", "--env", "miniwob"], cwd=project.path,
                               stdout=log, stderr=subprocess.STDOUT, env=environment)
    tree = [run.pid]
    try:
        wait_until(lambda: run.poll() is not None or left_by(kedro_run_tree(run))[0], timeout_s=300)
        assert run.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
        time.sleep(3.0)  # gold episodes under way
        tree = kedro_run_tree(run)
        processes, directories = left_by(tree)
        assert len(processes) >= 10 and directories and "collect_expert_trajectories" in (tmp_path / "run.log").read_text()
        run.send_signal(signal.SIGKILL)
        run.wait()
        seconds = wait_until(lambda: left_by(tree) == ([], []) and not living({p.pid for p in processes}))
        print(f"{len(processes)} processes and {len(directories)} directories gone {seconds:.1f} s after the SIGKILL")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        remove_what_is_left(tree)


def kill_renderers(env) -> None:
    """SIGKILL every renderer process of ``env``'s browser (the page's tab crashes)."""
    renderers = [p for p in env.page.window.browser.processes.members() if "--type=renderer" in " ".join(p.cmdline())]
    assert renderers
    for process in renderers:
        process.kill()
    wait_until(lambda: not living({p.pid for p in renderers}))


def test_reset_recovers_from_a_renderer_crash(no_browser_left):  # noqa: F811
    env = make_env(EnvironmentSpec("miniwob", "click-test", max_steps=4))
    try:
        env.reset(0, "train")
        kill_renderers(env)  # between episodes
        env.reset(1, "train")
        assert env.step(env.gold_actions()[0])[4]["won"]
        env.reset(2, "train")
        kill_renderers(env)  # in an episode: the step that meets it raises
        with pytest.raises(EnvironmentCrashedError, match="renderer crashed"):
            env.step(env.gold_actions()[0])
        env.reset(3, "train")
        assert env.step(env.gold_actions()[0])[4]["won"]
    finally:
        env.close()

"""How one browser starts: chromedriver and its Chromium, each browser in a directory and a
session of its own, registered with the reaper before chromedriver starts.

``start_browser`` cleans up after dead runs at this process's first browser start
(``dead_runs.clean_up_dead_runs``), makes the browser's directory (``processes.new_marker``:
its profile parent and the ``HOME`` and ``TMPDIR`` of chromedriver and Chromium), watches it
with the reaper (``reaper.browser_reaper``), and starts chromedriver in a new session with
``CHROMIUM_FLAGS``. A start past its time limit, or one that fails, is killed as a whole
(``processes.BrowserProcesses.kill``) and raises ``EnvironmentCrashedError``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from typing import Any

import psutil

from hindsight.envs.base import EnvironmentCrashedError
from hindsight.envs.miniwob.dead_runs import clean_up_dead_runs
from hindsight.envs.miniwob.processes import MARKER_VARIABLE, BrowserProcesses, new_marker
from hindsight.envs.miniwob.reaper import browser_reaper

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root in a container: the sandbox cannot start
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--no-first-run",
    "--no-default-browser-check",
    "--password-store=basic",
    "--mute-audio",
    "--force-device-scale-factor=1",  # one CSS pixel = one screenshot pixel
    "--window-size=500,500",  # the viewport must hold the 160 x 210 task area (headless keeps ~140 px of window frame)
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
)
"""Chromium's command line (besides ``--user-data-dir``): headless, no network of its own,
no sandbox (it cannot start as root), no throttling of any window."""


_cleaned_up_in: int | None = None
_clean_up_lock = threading.Lock()


def _clean_up_dead_runs_once() -> None:
    """At this process's first browser start: kill what dead runs left and remove their
    directories (``dead_runs.clean_up_dead_runs``)."""
    global _cleaned_up_in
    with _clean_up_lock:
        if _cleaned_up_in != os.getpid():
            _cleaned_up_in = os.getpid()
            clean_up_dead_runs()


def start_browser(chrome_binary: str, chromedriver: str, timeout_s: float) -> tuple[Any, Any, BrowserProcesses]:
    """Start chromedriver and Chromium; a start past ``timeout_s`` is killed and raises
    ``EnvironmentCrashedError`` (as does any other failed start). Returns (the Selenium
    driver, its chromedriver ``Service``, the browser's processes)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    _clean_up_dead_runs_once()
    marker = new_marker()
    os.mkdir(os.path.join(marker, "tmp"))
    browser_reaper().watch(marker)  # from here on, this process's death kills the browser
    options = webdriver.ChromeOptions()
    options.binary_location = chrome_binary
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={os.path.join(marker, 'profile')}")
    service = Service(
        executable_path=chromedriver,
        env={**os.environ, "HOME": marker, "TMPDIR": os.path.join(marker, "tmp"), MARKER_VARIABLE: marker},
        log_output=subprocess.DEVNULL,
        popen_kw={"start_new_session": True},
    )

    def kill_started() -> None:
        process = getattr(service, "process", None)
        try:
            if process is not None:
                BrowserProcesses(psutil.Process(process.pid), marker).kill()
        except psutil.Error:
            pass
        finally:
            shutil.rmtree(marker, ignore_errors=True)
            browser_reaper().forget(marker)

    timer = threading.Timer(timeout_s, kill_started)
    timer.daemon = True
    timer.start()
    try:
        driver = webdriver.Chrome(service=service, options=options)
    except BaseException as error:
        timer.cancel()
        kill_started()
        if isinstance(error, Exception):
            raise EnvironmentCrashedError(
                f"Chromium did not start ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})."
            ) from error
        raise
    finally:
        timer.cancel()
    processes = BrowserProcesses(psutil.Process(service.process.pid), marker)
    browser_reaper().watch(marker, processes.group)
    processes.members()
    return driver, service, processes

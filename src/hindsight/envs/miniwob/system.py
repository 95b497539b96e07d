"""Check that Chromium and chromedriver are installed, as ``hindsight.envs.java`` checks Java.

The MiniWoB++ environments drive a headless Chromium through chromedriver (Selenium). Without
them Selenium would try to download a browser at run time (there is no network here) and
fail deep inside a rollout, so the environment and the start-of-run hook call
``check_chromium`` first: it raises an ``EnvironmentConfigError`` saying what is missing and
how to install it.

Where they are looked for: ``MINIWOB_CHROME_BINARY`` and ``MINIWOB_CHROMEDRIVER`` (the
variables the ``miniwob`` package reads) when set, otherwise ``chromium`` (or
``chromium-browser``, ``google-chrome``) and ``chromedriver`` on ``PATH``. Both must have the
same major version (chromedriver refuses another browser's).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from functools import lru_cache

from hindsight.envs.base import EnvironmentConfigError

logger = logging.getLogger(__name__)

INSTALL_HINT = (
    "Install them with `apt-get install --no-install-recommends chromium chromium-driver` (Debian/Ubuntu; "
    "about 370 MB), or point MINIWOB_CHROME_BINARY and MINIWOB_CHROMEDRIVER at a Chromium and the "
    "chromedriver of the same version."
)
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)
_VERSION = re.compile(r"(\d+)\.\d+\.\d+")


def _find(variable: str, names: tuple[str, ...]) -> str | None:
    configured = os.environ.get(variable)
    if configured:
        return configured
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_paths() -> tuple[str, str]:
    """(Chromium, chromedriver) executables (see the module docstring), not checked."""
    return (_find("MINIWOB_CHROME_BINARY", BROWSER_NAMES) or "chromium", _find("MINIWOB_CHROMEDRIVER", DRIVER_NAMES) or "chromedriver")


def _major_version(executable: str, what: str) -> int:
    try:
        completed = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise EnvironmentConfigError(f"No {what} found (`{executable}`). The MiniWoB++ environments need it. {INSTALL_HINT}") from None
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentConfigError(f"`{executable} --version` failed to run ({error}). {INSTALL_HINT}") from None
    match = _VERSION.search(completed.stdout or "")
    if completed.returncode != 0 or match is None:
        output = ((completed.stdout or "") + (completed.stderr or "")).strip()[:200]
        raise EnvironmentConfigError(
            f"`{executable} --version` did not report a version (exit code {completed.returncode}, output: {output!r}). {INSTALL_HINT}"
        )
    return int(match.group(1))


@lru_cache(maxsize=None)
def _check(chrome_binary: str, chromedriver: str) -> tuple[str, str, int]:
    if shutil.which(chrome_binary) is None:
        raise EnvironmentConfigError(
            f"No Chromium found: `{chrome_binary}` is not an executable on PATH. The MiniWoB++ environments "
            f"(environment.env: miniwob) run a headless Chromium. {INSTALL_HINT}"
        )
    if shutil.which(chromedriver) is None:
        raise EnvironmentConfigError(
            f"No chromedriver found: `{chromedriver}` is not an executable on PATH. The MiniWoB++ environments "
            f"(environment.env: miniwob) drive Chromium through it. {INSTALL_HINT}"
        )
    browser_major = _major_version(chrome_binary, "Chromium")
    driver_major = _major_version(chromedriver, "chromedriver")
    if browser_major != driver_major:
        raise EnvironmentConfigError(
            f"Chromium {browser_major} (`{chrome_binary}`) and chromedriver {driver_major} (`{chromedriver}`) differ: "
            f"chromedriver drives only its own version. {INSTALL_HINT}"
        )
    logger.debug("Chromium %d at %s, chromedriver at %s", browser_major, chrome_binary, chromedriver)
    return shutil.which(chrome_binary), shutil.which(chromedriver), browser_major


def check_chromium() -> tuple[str, str, int]:
    """Raise ``EnvironmentConfigError`` unless Chromium and a chromedriver of its version run.

    The result is cached per pair of executables (the check spawns two processes).

    Returns:
        (Chromium's path, chromedriver's path, their major version).

    Raises:
        EnvironmentConfigError: Either is missing, does not run, or their versions differ.
    """
    return _check(*chromium_paths())

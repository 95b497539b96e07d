"""Check that a Java runtime recent enough for the JVM-backed environments is installed.

TextWorldExpress and ScienceWorld run their simulators in a Java 17 virtual machine that
py4j starts with the ``java`` found on ``PATH``. Without it they fail deep inside py4j
with an unhelpful error, so the adapters call ``check_java`` first and raise an
``EnvironmentConfigError`` that says what is missing and how to install it.
"""

from __future__ import annotations

import logging
import re
import subprocess
from functools import lru_cache

from hindsight.envs.base import EnvironmentConfigError

logger = logging.getLogger(__name__)

INSTALL_HINT = (
    "Install a Java {min_major}+ runtime, e.g. `apt-get install openjdk-{min_major}-jre-headless` "
    "(Debian/Ubuntu), `brew install openjdk@{min_major}` (macOS) or `conda install -c conda-forge "
    "openjdk={min_major}`, and make sure `java` is on PATH."
)

_VERSION_PATTERN = re.compile(r'version\s+"(?P<version>[^"]+)"')


def parse_java_major(version_output: str) -> int | None:
    """The major version in the text ``java -version`` prints, or None if there is none.

    Handles both schemes: ``"1.8.0_292"`` is Java 8, ``"17.0.15"`` and ``"21"`` are 17 and 21.

    Args:
        version_output: What ``java -version`` wrote (it writes to stderr).

    Returns:
        The major version number, or None when no version string is found.
    """
    match = _VERSION_PATTERN.search(version_output)
    if not match:
        return None
    parts = re.split(r"[._+-]", match.group("version"))
    try:
        first = int(parts[0])
        return int(parts[1]) if first == 1 and len(parts) > 1 else first
    except ValueError:
        return None


@lru_cache(maxsize=None)
def check_java(min_major: int = 17, java_executable: str = "java") -> int:
    """Raise ``EnvironmentConfigError`` unless ``java_executable`` is Java ``min_major`` or newer.

    The result is cached per (min_major, java_executable): the check spawns one process.

    Args:
        min_major: The oldest acceptable major version.
        java_executable: The Java launcher to check (py4j starts ``java`` from PATH).

    Returns:
        The major version found.

    Raises:
        EnvironmentConfigError: Java is missing, does not run, or is older than ``min_major``.
    """
    hint = INSTALL_HINT.format(min_major=min_major)
    try:
        completed = subprocess.run(
            [java_executable, "-version"], capture_output=True, text=True, timeout=60
        )
    except FileNotFoundError:
        raise EnvironmentConfigError(
            f"No Java runtime found: `{java_executable}` is not on PATH. TextWorldExpress and "
            f"ScienceWorld need Java {min_major}+. {hint}"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentConfigError(f"`{java_executable} -version` failed to run ({error}). {hint}") from None
    output = (completed.stderr or "") + (completed.stdout or "")
    major = parse_java_major(output)
    if completed.returncode != 0 or major is None:
        raise EnvironmentConfigError(
            f"`{java_executable} -version` did not report a version (exit code "
            f"{completed.returncode}, output: {output.strip()[:200]!r}). {hint}"
        )
    if major < min_major:
        raise EnvironmentConfigError(
            f"Java {major} found (`{java_executable}`), but Java {min_major}+ is needed. {hint}"
        )
    logger.debug("Java %d found at %s", major, java_executable)
    return major

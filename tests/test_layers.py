"""The package layering is a checked contract: ``lint-imports`` (import-linter) runs the
contracts of ``[tool.importlinter]`` in ``pyproject.toml`` (the layers, top to bottom, and
no import cycle between the top-level packages) and must report no broken one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())", "--no-cache"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, f"lint-imports found broken contracts:\n{result.stdout}\n{result.stderr}"

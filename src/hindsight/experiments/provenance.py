"""Where a grid cell's result came from, for its committed summary (``experiments.summaries``):
the project's git commit and the machine's CPU model (and GPU, when one ran it)."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

UNKNOWN_COMMIT = "unknown (not a git work tree)"


def git_commit(cwd: str | Path | None = None) -> str:
    """The commit checked out in ``cwd`` (default: the current directory), with ``-dirty`` when
    a tracked file differs from it (new untracked files, such as the summaries a grid writes,
    do not count); ``UNKNOWN_COMMIT`` outside a git work tree."""
    where = str(cwd or Path.cwd())
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where, capture_output=True, text=True,
                                timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN_COMMIT
    return commit + ("-dirty" if status else "") if commit else UNKNOWN_COMMIT


def cpu_model() -> str:
    """The CPU's model name and core count, and the GPU's name when torch sees one."""
    model = platform.processor() or "unknown CPU"
    try:
        found = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
        model = found[1].strip() if found else model
    except OSError:
        pass
    text = f"{model}, {os.cpu_count()} cores"
    try:
        import torch

        if torch.cuda.is_available():
            text += f"; GPU: {torch.cuda.get_device_name(0)}"
    except Exception:  # no torch or no driver: the CPU is the machine
        pass
    return text

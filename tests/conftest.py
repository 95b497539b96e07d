"""Fixtures for the whole suite.

Torch runs on one intra-op thread: on a 2-core machine shared with other work, two OpenMP
threads per process oversubscribe the cores and the tiny models' small ops slow down many
times over (measured: the conf/test default pipeline took 45 s with one thread and 340 s
with two while another process kept the cores busy).
"""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")


@pytest.fixture(scope="session", autouse=True)
def single_torch_thread():
    """One intra-op thread for the whole session (restored afterwards)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)

"""Shared fixture of the evaluation tests: one torch thread (small tensors on a shared
2-core machine run many times slower with two)."""

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

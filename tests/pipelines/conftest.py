"""Fixtures of the pipeline tests: isolated project copies (``kedro_project``) and the
whole default pipeline run once per session.

Torch runs on one thread: on a 2-core machine shared with other work, two OpenMP threads
per process oversubscribe the cores and the tiny models' small ops slow down many times over
(measured: the default pipeline took 45 s with one thread and 340 s with two while another
process kept the cores busy).
"""

from __future__ import annotations

import pytest
import torch

from kedro_project import KedroProject, RunRecord


@pytest.fixture(scope="session", autouse=True)
def single_torch_thread():
    """One intra-op thread for the whole session (restored afterwards)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def trained_project(tmp_path_factory) -> tuple[KedroProject, RunRecord]:
    """The whole default pipeline (ingestion -> warm-up -> skills -> Stage 1 -> SEED ->
    evaluation) run once on ``conf/test`` in a fresh project."""
    project = KedroProject(tmp_path_factory.mktemp("trained_project"))
    record = project.run()
    return project, record

"""Fixtures of the pipeline tests: isolated project copies (``kedro_project``) and the
whole default pipeline run once per session.
"""

from __future__ import annotations

import pytest

from kedro_project import KedroProject, RunRecord


@pytest.fixture(scope="session")
def trained_project(tmp_path_factory) -> tuple[KedroProject, RunRecord]:
    """The whole default pipeline (ingestion -> behaviour_cloning -> skills -> stage1 ->
    training -> evaluation) run once on ``conf/test`` in a fresh project."""
    project = KedroProject(tmp_path_factory.mktemp("trained_project"))
    record = project.run()
    return project, record

"""Fixtures of the pipeline tests: isolated project copies (``kedro_project``) and the
whole default pipeline run once per session, with the stages that start from it
(``world_model``, ``state2state``) run once on it for every test that reads them.

A test that runs a later stage with settings of its own works on
``KedroProject.copy_of(trained_project[0], tmp_path)``: the trained catalog, its own MLflow
database, nothing trained twice.
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


@pytest.fixture(scope="session")
def world_model_run(trained_project) -> RunRecord:
    """``kedro run --pipeline world_model`` on the trained project."""
    project, _ = trained_project
    return project.run(pipeline_names=["world_model"])


@pytest.fixture(scope="session")
def state2state_run(trained_project) -> RunRecord:
    """``kedro run --pipeline state2state`` on the trained project (from its base policy)."""
    project, _ = trained_project
    return project.run(pipeline_names=["state2state"])

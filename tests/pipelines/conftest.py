"""Fixtures of the pipeline tests: the stages that start from the trained project
(``trained_project`` of tests/conftest.py: the whole default pipeline run once per worker),
``world_model`` and ``state2state``, run once on it for every test that reads them, and the
experiment grid run once on it for every grid test.

A test that runs a later stage with settings of its own works on
``KedroProject.copy_of(trained_project[0], tmp_path)``: the trained catalog, its own MLflow
database, nothing trained twice.
"""

from __future__ import annotations

import pytest
import yaml

from kedro_project import PROJECT_ROOT, KedroProject, RunRecord

OPT_IN_METHODS = ["wmr1", "grpo_state2state", "grpo_async"]
"""The grid's methods that start from the catalog's models (the world model, the State2State
checkpoint) or run a rollout worker process, added to the quick preset's in ``experiment_grid``."""


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


@pytest.fixture(scope="session")
def experiment_grid(trained_project, world_model_run, state2state_run, tmp_path_factory) -> tuple[KedroProject, RunRecord, RunRecord]:
    """One grid for every grid test: the quick preset's methods (conf/test) and
    ``OPT_IN_METHODS``, alone (``--from-nodes experiments.check_grid_inputs``) on a copy of
    the trained project's catalog after the world model and State2State runs (its Stage-1,
    base and State2State policies, its world model, its skills), twice: (the project, the
    first run, the re-run on the same data)."""
    quick = yaml.safe_load((PROJECT_ROOT / "conf" / "test" / "parameters.yml").read_text())["experiments"]["presets"]["quick"]
    grid = {"experiments": {"presets": {"quick": {"methods": [*quick["methods"], *OPT_IN_METHODS]}}}}
    project = KedroProject.copy_of(trained_project[0], tmp_path_factory.mktemp("experiments_project"))
    first = project.run(pipeline_names=["experiments"], from_nodes=["experiments.check_grid_inputs"], runtime_params=grid)
    rerun = project.run(pipeline_names=["experiments"], from_nodes=["experiments.check_grid_inputs"], runtime_params=grid)
    return project, first, rerun

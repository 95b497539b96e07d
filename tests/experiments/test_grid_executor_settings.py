"""``experiments.executor`` and ``experiments.cell_resources``: bad values are refused by name,
``local`` needs no Ray (not even its import), ``ray`` gets the declared resources."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hindsight.config.files import grid_settings
from hindsight.params import ParameterError
from hindsight.pipelines.experiments.nodes import grid_executor


@pytest.mark.parametrize(
    ("experiments", "named"),
    [
        ({"executor": "dask"}, "experiments.executor='dask'"),
        ({"cell_resources": {"num_cpus": 0}}, "experiments.cell_resources.num_cpus"),
        ({"cell_resources": {"num_gpus": -1}}, "experiments.cell_resources.num_gpus"),
        ({"cell_resources": {"memory_gb": 0}}, "experiments.cell_resources.memory_gb"),
        ({"cell_resources": {"max_retries": -1}}, "experiments.cell_resources.max_retries"),
        ({"cell_resources": {"cpus": 2}}, "cpus"),
        ({"ray_address": 6379}, "experiments.ray_address"),
    ],
)
def test_bad_executor_settings_are_refused_by_name(experiments, named):
    with pytest.raises(ParameterError, match=named.replace(".", r"\.").replace("'", ".")):
        grid_settings(None, experiments)


def test_local_is_no_executor_and_ray_gets_the_declared_resources(monkeypatch):
    assert grid_executor(grid_settings(None, {})) is None
    monkeypatch.delenv("HINDSIGHT_TORCH_THREADS", raising=False)
    executor = grid_executor(grid_settings(None, {
        "executor": "ray", "ray_address": "10.0.0.1:6379",
        "cell_resources": {"num_cpus": 2, "num_gpus": 0.5, "memory_gb": 3, "max_retries": 4},
    }))
    assert executor.address == "10.0.0.1:6379" and executor.torch_threads == 2
    assert executor.options == {"num_cpus": 2, "num_gpus": 0.5, "max_retries": 4, "retry_exceptions": False, "memory": 3 * 2**30}
    monkeypatch.setenv("HINDSIGHT_TORCH_THREADS", "1")
    assert grid_executor(grid_settings(None, {"executor": "ray"})).torch_threads == 1


def test_the_grid_does_not_import_ray_unless_it_runs_on_ray():
    code = "import sys, hindsight.pipelines.experiments.nodes, hindsight.experiments.ray_grid; print('ray' in sys.modules)"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert imported == "False"

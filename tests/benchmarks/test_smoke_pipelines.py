"""The benchmarks that run Kedro, smoke-run at a tiny size on ``conf/test``
(``conftest.run_benchmark``), from a copy of the trained project (``trained_project`` of
tests/conftest.py; ``tests/pipelines/kedro_project.py``): ``rl_update_cost.py`` and
``profile_run.py`` run ``kedro run`` in it, ``reliability_resume.py`` kills and resumes
training runs started from its catalog (``--prepared``); ``reliability_inputs.py`` builds its
own copy and runs two malformed files through ingestion. Kedro runs: the file is slow and
``pipeline``-marked."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipelines"))
from kedro_project import KedroProject  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]

SMOKE = {
    "rl_update_cost.py": (("--updates", "1", "--env", "test", "--config", "training.rl.algorithm=grpo"), "**one update**"),
    "profile_run.py": (("--out", "{tmp}/profile.raw", "--", "--env", "test", "--pipeline", "ingestion"), "By phase over the whole run"),
    "reliability_inputs.py": (("--files", "2"), "dataset versions written on bad input: 0"),
    "reliability_resume.py": (
        ("--kills", "1", "--updates", "2", "--seed", "0", "--prepared", "{project}",
         "--params", "training.rl.tasks_per_update=1,environment.max_steps=6"),
        "identical resumes: 1/1",
    ),
}
IN_PROJECT = ("rl_update_cost.py", "profile_run.py")
"""The scripts that run ``kedro run`` in the current directory: they run in the project."""


@pytest.fixture(scope="module")
def benchmark_project(trained_project, tmp_path_factory) -> KedroProject:
    """A copy of the trained project: a Stage-1 checkpoint (what RL training starts from)."""
    return KedroProject.copy_of(trained_project[0], tmp_path_factory.mktemp("benchmark_project"))


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_script_prints_its_figures_at_a_tiny_size(script, run_benchmark, benchmark_project):
    cwd = benchmark_project.path if script in IN_PROJECT else None
    args, expected = SMOKE[script]
    run_benchmark(script, args, expected, cwd=cwd, project=benchmark_project.path)

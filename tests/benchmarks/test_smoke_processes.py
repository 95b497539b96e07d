"""The benchmarks that start other processes, smoke-run at a tiny size
(``conftest.run_benchmark``): a Ray cluster of two local nodes, ``torchrun`` with two ranks,
the asynchronous rollout worker, Chromium for MiniWoB++, JVMs killed and stopped on purpose,
and the teacher's fault server. Each start costs seconds to tens of seconds whatever the
size, so the file is slow: left out of the README's command, run by ``.ci/run`` with every tier."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

SMOKE = {
    "grid_executor.py": (("--cells", "2", "--work", "5"), "| work | ray, 2 nodes x 1 CPU |"),
    "distributed_learner.py": (("--samples", "4", "--length", "32", "--response", "2", "--processes", "2"),
                               "largest weight difference"),
    "async_rollouts.py": (
        ("--updates", "1", "--staleness", "0", "--heldout", "1", "--gold-episodes", "2", "--bc-steps", "1",
         "--tasks-per-update", "1", "--group-size", "2", "--ppo-epochs", "1"),
        "speedup_vs_sync",
    ),
    "empo_gui.py": (
        ("--threads", "1", "--set", "environment.games=[{game: click-test}]", "--expert-episodes", "1", "--bc-steps", "1",
         "--tasks-per-game", "1", "--updates", "1", "--tasks-per-update", "1", "--group-size", "2", "--eval-every", "1",
         "--heldout", "1", "--trials", "1"),
        "EMPO mechanism, last update",
    ),
    "miniwob_costs.py": (("--seeds", "1", "--windows", "2"), "live browsers after close: 0"),
    "reliability_envs.py": (("--kills", "1", "--hangs", "1", "--scienceworld-kills", "1"), "ScienceWorld JVM kills survived"),
    "reliability.py": (("--only", "teacher"), "all must-be figures hold (teacher)"),
}


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_script_prints_its_figures_at_a_tiny_size(script, run_benchmark):
    args, expected = SMOKE[script]
    run_benchmark(script, args, expected)

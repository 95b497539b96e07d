"""The transition-source benchmarks (State2State and the world model), smoke-run at a tiny
size in this process (``conftest.run_benchmark``) on ``conf/test`` (``--env test``) with the
game cut to twc, 8 steps per episode: a few behaviour-cloning and world-model steps, one or
two RL updates per arm, one held-out task. The figures mean nothing at this size."""

from __future__ import annotations

import pytest

TWC = "environment.games=[{game: twc, params: {numLocations: 1, numItemsToPutAway: 2, includeDoors: 0}}]"

SMOKE = {
    "state2state.py": (
        ("--env", "test", "--updates", "2", "--s2s-updates", "1", "--bc-steps", "2", "--episodes", "1", "--set", TWC,
         "--set", "environment.max_steps=8", "--set", "ingestion.expert_episodes.train=2", "--set", "training.tasks_per_game=1",
         "--set", "state2state.tasks_per_game=1", "--set", "training.rl.tasks_per_update=1"),
        "held-out success %",
    ),
    "wmr1_vs_grpo.py": (
        ("--env", "test", "--set", TWC, "--set", "environment.max_steps=8", "--set", "ingestion.expert_episodes.train=2",
         "--set", "behaviour_cloning.sft.max_steps=2", "--set", "world_model.sft.max_steps=2", "--set", "world_model.heldout_max_examples=2",
         "--set", "world_model.query.max_new_tokens=8", "--set", "training.tasks_per_game=1", "--set", "training.heldout.episodes_per_game=1",
         "--set", "training.heldout.splits=[seen]", "--set", "training.rl.updates=1", "--set", "training.rl.tasks_per_update=1",
         "--set", "training.rl.group_size=2"),
        "sim-to-real on the",
    ),
}


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_script_prints_its_figures_at_a_tiny_size(script, run_benchmark):
    args, expected = SMOKE[script]
    run_benchmark(script, args, expected)

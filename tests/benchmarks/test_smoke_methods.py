"""The method comparisons, smoke-run at a tiny size in this process
(``conftest.run_benchmark``): each plays gold twc episodes, behaviour-clones the project's
tiny policy for a few steps, runs one RL update of each arm on the real game and evaluates
on one held-out task, printing its table. The scripts that read the project's parameters
run on ``conf/test`` (``--env test``, the suite's tiny configuration) with the game cut to
twc; the figures mean nothing at this size. The transition sources (State2State, the world
model) are test_smoke_transition_sources.py's: the two files run on two workers."""

from __future__ import annotations

import pytest

TWC = "environment.games=[{game: twc, params: {numLocations: 1, numItemsToPutAway: 2, includeDoors: 0}}]"

SMOKE = {
    "schedulers.py": (
        ("--methods", "grpo", "grpo_curriculum", "--updates", "1", "--tasks", "1", "--group", "2", "--pool", "2", "--heldout", "1",
         "--gold", "2", "--bc-steps", "1"),
        "| grpo_curriculum |",
    ),
    "behaviour_cloning_settings.py": (
        ("--env", "test", "--episodes", "1", "--set", TWC, "--set", "ingestion.expert_episodes.train=2",
         "--set", "behaviour_cloning.sft.max_steps=2", "--set", "evaluation.heldout.splits=[seen]",
         "--set", "evaluation.heldout.decodings={sampled: {temperature: 0.4}}"),
        "held-out success %",
    ),
    "empo_vs_grpo.py": (
        ("--env", "test", "--set", TWC, "--expert-episodes", "2", "--bc-steps", "2",
         "--tasks-per-game", "1", "--updates", "1", "--tasks-per-update", "1", "--group-size", "2", "--eval-every", "1", "--heldout", "1"),
        "EMPO mechanism, last update",
    ),
    "skill_information.py": (("--configs", "default", "--expert", "2", "--bc-steps", "2", "--tasks", "2"), "| default |"),
}


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_script_prints_its_figures_at_a_tiny_size(script, run_benchmark):
    args, expected = SMOKE[script]
    run_benchmark(script, args, expected)

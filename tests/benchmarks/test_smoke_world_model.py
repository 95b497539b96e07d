"""The world model's calibration benchmark, smoke-run at a tiny size in this process
(``conftest.run_benchmark``): on ``conf/test`` with the game cut to twc it collects two gold
episodes, behaviour-clones the tiny policy for two steps, plays its episodes on the real
game, then trains both world models (gold only, gold + policy) for two steps and prints
their calibration tables; the figures mean nothing at this size."""

from __future__ import annotations

import pytest

TWC = "environment.games=[{game: twc, params: {numLocations: 1, numItemsToPutAway: 2, includeDoors: 0}}]"

SMOKE = {
    "world_model_calibration.py": (
        ("--env", "test", "--from-scratch", "--set", TWC, "--set", "ingestion.expert_episodes.train=2",
         "--set", "behaviour_cloning.sft.max_steps=2", "--set", "world_model.sft.max_steps=2", "--set", "world_model.heldout_max_examples=2",
         "--set", "world_model.heldout_fraction=0.5", "--set", "world_model.query.max_new_tokens=8",
         "--set", "world_model.policy_episodes.tasks_per_game=2", "--set", "world_model.policy_episodes.episodes_per_task=2",
         "--set", "world_model.calibration.imagined_tasks=1", "--set", "world_model.calibration.imagined_episodes_per_task=1"),
        "== gold + policy ==",
    ),
}


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_script_prints_its_tables_at_a_tiny_size(script, run_benchmark):
    args, expected = SMOKE[script]
    output = run_benchmark(script, args, expected)
    assert "outcome_agreement" in output and "imagined_won_share" in output

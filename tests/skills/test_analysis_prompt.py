"""Format and length cap of the analysis prompt; the JSON target."""

import json

import pytest

from hindsight.skills import build_analysis_prompt, parse_skill_json, skill_target_json

pytestmark = pytest.mark.unit

STEPS = [
    {"observation": "You are in the kitchen.", "response": "open fridge", "action_valid": True},
    {"observation": "The fridge is open.", "response": "eat fridge", "action_valid": False},
]


def test_success_prompt_has_every_part_in_order():
    prompt = build_analysis_prompt("Cook a meal.", True, STEPS)
    expected_parts = [
        "Task description: Cook a meal.",
        "episode_success: success",
        "Trajectory (2 steps):",
        "Step 1\nObservation: You are in the kitchen.\nResponse: open fridge\nAction valid: true",
        "Step 2\nObservation: The fridge is open.\nResponse: eat fridge\nAction valid: false",
        "workflow",
        "Return only JSON with fields episode_summary, episode_skill",
    ]
    positions = [prompt.index(part) for part in expected_parts]
    assert positions == sorted(positions)


def test_failure_prompt_asks_for_an_avoidance_rule():
    prompt = build_analysis_prompt("Cook a meal.", False, STEPS)
    assert "episode_success: failure" in prompt
    assert "avoidance rule" in prompt and "workflow skill" not in prompt


def test_long_trajectories_keep_the_last_steps_and_say_so():
    steps = [{"observation": f"room {k} " + "x" * 200, "response": f"action {k}", "action_valid": True}
             for k in range(1, 101)]
    prompt = build_analysis_prompt("Explore.", False, steps, max_chars=3000)
    assert len(prompt) <= 3000
    assert "Response: action 100\n" in prompt and "Response: action 1\n" not in prompt
    shown = prompt.count("\nStep ")
    assert f"the first {100 - shown} are omitted for length, the last {shown} are shown" in prompt
    assert f"Step {100 - shown + 1}\n" in prompt  # original step numbers are kept


def test_skill_target_json_round_trips():
    target = skill_target_json("Did it.", 'do "take" before "put"')
    assert json.loads(target) == {"episode_summary": "Did it.", "episode_skill": 'do "take" before "put"'}
    assert parse_skill_json(target) == {"episode_summary": "Did it.", "episode_skill": 'do "take" before "put"'}

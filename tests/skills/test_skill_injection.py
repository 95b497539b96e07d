"""Placement of the episode-level skill block in a step prompt."""

import pytest

from hindsight.policy.prompts import TURN_LINE, build_prompt
from hindsight.skills import inject_skill, injected_skill, remove_skill

pytestmark = pytest.mark.unit

BLOCK = (
    "**Episode-Level Skill**\n"
    "Refer to this episode-level skill when deciding what action to take in the current episode:\n"
    "[take <object> before put <object> in <container>]"
)


def test_injected_right_after_the_task_line():
    prompt = build_prompt("Tidy up the room.", [("You see a sock.", "take sock")], "You hold a sock.",
                          ["put sock in basket", "look around"])
    injected = inject_skill(prompt, "take <object> before put <object> in <container>")
    lines = injected.split("\n")
    assert lines[0] == "Task: Tidy up the room."
    assert "\n".join(lines[1:4]) == BLOCK
    assert "\n".join([lines[0], *lines[4:]]) == prompt  # nothing else changes
    assert injected.endswith(TURN_LINE + "\n")


def test_falls_back_to_before_the_turn_line():
    prompt = f"Current observation: a room\nValid actions: a | b\n{TURN_LINE}\n"
    injected = inject_skill(prompt, "take <object> before put <object> in <container>")
    assert injected == f"Current observation: a room\nValid actions: a | b\n{BLOCK}\n{TURN_LINE}\n"


def test_before_turn_placement_puts_the_block_next_to_the_action():
    prompt = build_prompt("Tidy up the room.", [("You see a sock.", "take sock")], "You hold a sock.",
                          ["put sock in basket", "look around"])
    injected = inject_skill(prompt, "take <object> before put <object> in <container>", placement="before_turn")
    assert injected.endswith(f"{BLOCK}\n{TURN_LINE}\n")
    assert remove_skill(injected) == prompt
    with pytest.raises(ValueError, match="placement must be after_task or before_turn"):
        inject_skill(prompt, "x", placement="middle")


def test_appends_when_neither_line_exists_and_flattens_the_skill():
    injected = inject_skill("Observation: dark\n", "take <object>\nbefore  put <object> in <container>")
    assert injected == f"Observation: dark\n{BLOCK}\n"


def test_empty_skill_leaves_the_prompt_unchanged():
    assert inject_skill("Task: x\nYour turn.\n", "  ") == "Task: x\nYour turn.\n"


@pytest.mark.parametrize("prompt", [
    "Task: x\nCurrent observation: y\nYour turn.\n",  # after the task line
    f"Current observation: a room\n{TURN_LINE}\n",  # before the turn line
    "Observation: dark\n",  # appended
    "Observation: dark",
])
def test_remove_skill_gives_back_the_plain_prompt_and_injected_skill_the_skill(prompt):
    skilled = inject_skill(prompt, "do: take sock;\nput sock in basket")
    assert remove_skill(skilled) == prompt
    assert injected_skill(skilled) == "do: take sock; put sock in basket"  # as injected: one line
    assert remove_skill(prompt) == prompt and injected_skill(prompt) is None  # nothing to remove


def test_a_broken_block_is_refused_naming_its_line():
    broken = "Task: x\n**Episode-Level Skill**\nsomething else\n[do: look]\n"
    for read in (remove_skill, injected_skill):
        with pytest.raises(ValueError, match="line 2"):
            read(broken)

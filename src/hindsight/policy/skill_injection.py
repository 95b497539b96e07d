"""Skill injection into a step prompt (docs/fidelity.md, SEED).

The block

    **Episode-Level Skill**
    Refer to this episode-level skill when deciding what action to take in the current episode:
    [<episode_skill>]

goes right after the task line (the first line starting with ``prompts.TASK_PREFIX``); when
there is no task line, right before the turn line (``prompts.TURN_LINE``); when there is
neither, at the end. It works on the plain prompt text, before any chat template is applied
(``prompts.render_for_model``), so the plain and the skill-augmented prompt differ by this
block only; ``injected_skill`` reads it back and ``remove_skill`` takes it out again.
"""

from __future__ import annotations

from hindsight.policy.prompts import TASK_PREFIX, TURN_LINE

SKILL_HEADER = "**Episode-Level Skill**"
SKILL_INSTRUCTION = "Refer to this episode-level skill when deciding what action to take in the current episode:"


def skill_block(skill: str) -> str:
    """The three injected lines (no trailing newline); the skill is put on one line."""
    return f"{SKILL_HEADER}\n{SKILL_INSTRUCTION}\n[{' '.join(skill.split())}]"


def inject_skill(prompt: str, skill: str, placement: str = "after_task") -> str:
    """Insert the episode-level skill block into a step prompt.

    Args:
        prompt: The plain step prompt (as built by ``hindsight.policy.prompts.build_prompt``).
        skill: The episode skill; whitespace (newlines included) is collapsed to single
            spaces so the prompt stays line-structured. An empty skill leaves the prompt as is.
        placement: ``after_task`` (the paper's place, module docstring) or ``before_turn``
            (right before the turn line, next to the action; ``benchmarks/skill_use.py``).

    Returns:
        The skill-augmented prompt.
    """
    if placement not in ("after_task", "before_turn"):
        raise ValueError(f"skill placement must be after_task or before_turn, got {placement!r}")
    if not skill or not skill.strip():
        return prompt
    block = skill_block(skill)
    lines = prompt.split("\n")
    if placement == "after_task":
        for position, line in enumerate(lines):
            if line.startswith(TASK_PREFIX):
                return "\n".join([*lines[: position + 1], block, *lines[position + 1 :]])
    for position, line in enumerate(lines):
        if line.strip().startswith(TURN_LINE):
            return "\n".join([*lines[:position], block, *lines[position:]])
    body = prompt.rstrip("\n")
    ending = prompt[len(body) :]
    return f"{body}\n{block}{ending}" if body else f"{block}{ending}"


def _block_start(lines: list[str]) -> int | None:
    """Index of the skill block's header line, or None; a header not followed by the
    block's instruction and a bracketed skill is an error naming the line."""
    if SKILL_HEADER not in lines:
        return None
    start = lines.index(SKILL_HEADER)
    block = lines[start : start + 3]
    if len(block) < 3 or block[1] != SKILL_INSTRUCTION or not (block[2].startswith("[") and block[2].endswith("]")):
        raise ValueError(f"{SKILL_HEADER!r} at line {start + 1} does not start a skill block: {block!r}")
    return start


def injected_skill(prompt: str) -> str | None:
    """The skill injected into a prompt (as one line), or None when it has none."""
    lines = prompt.split("\n")
    start = _block_start(lines)
    return None if start is None else lines[start + 2][1:-1]


def remove_skill(prompt: str) -> str:
    """The prompt without its skill block (the inverse of ``inject_skill`` for any prompt
    with a non-blank line); a prompt without one is returned as it is.

    Raises:
        ValueError: The header line is there but the two lines after it are not a skill
            block.
    """
    lines = prompt.split("\n")
    start = _block_start(lines)
    return prompt if start is None else "\n".join(lines[:start] + lines[start + 3 :])

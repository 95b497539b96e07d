"""The analysis prompt a teacher answers with a skill, and the JSON target it is trained on
(docs/fidelity.md, SEED).

The prompt gives the task description, ``episode_success: success|failure``, the trajectory
as ``Step k / Observation / Response / Action valid: true|false`` blocks, the instruction for
a workflow (success) or an avoidance rule (failure), and asks for JSON only with the fields
``episode_summary`` and ``episode_skill``. Long trajectories are cut from the front: the last
steps are kept and the prompt says how many were left out. The SFT set of the analyzer and
every teacher build their prompts here, so training and use see the same text.

``name_by_role`` (``analyzer.name_objects_by_role``) adds to the workflow instruction that
objects be named by their role rather than by name: our reading for a tiny policy; the
official release's prompt does not ask it.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from hindsight.policy.prompts import one_line

DEFAULT_MAX_CHARS = 6000
"""Cap on the whole prompt; earlier steps are dropped first."""
DEFAULT_MAX_FIELD_CHARS = 600
"""Cap on one observation or response (the start is kept)."""

INTRODUCTION = (
    "You are reviewing one finished episode of an agent in a text environment, to write a short "
    "skill that helps the agent on the next episode of the same kind of task."
)
WORKFLOW_INSTRUCTION = (
    "The episode succeeded. Write a workflow skill: the decision rule and the order of actions that "
    'made it work, as a short rule the agent can follow ("do X before Y"). Name objects by their '
    "role (object, container, tool) rather than by name, and do not retell the episode."
)
WORKFLOW_INSTRUCTION_BY_NAME = (
    "The episode succeeded. Write a workflow skill: the decision rule and the order of actions that "
    'made it work, as a short rule the agent can follow ("do X before Y"). Do not retell the episode.'
)
"""The workflow instruction without the request to name objects by role (the release's reading)."""
AVOIDANCE_INSTRUCTION = (
    "The episode failed. Write an avoidance rule: the core mistake and the warning signs that show "
    'it is happening, as a short rule the agent can follow ("avoid X; when you see Y, do Z instead"). '
    "Do not retell the episode."
)
OUTPUT_INSTRUCTION = (
    "Return only JSON with fields episode_summary, episode_skill: "
    '{"episode_summary": "<one sentence on what happened>", "episode_skill": "<the skill>"}'
)


def _step_block(number: int, step: dict[str, Any], limit: int) -> str:
    valid = "true" if bool(step.get("action_valid", True)) else "false"
    return (
        f"Step {number}\n"
        f"Observation: {one_line(step.get('observation', ''), limit)}\n"
        f"Response: {one_line(step.get('response', ''), limit)}\n"
        f"Action valid: {valid}"
    )


def build_analysis_prompt(
    task: str,
    success: bool,
    steps: Sequence[dict[str, Any]],
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
    name_by_role: bool = True,
) -> str:
    """Build the analysis prompt of one episode.

    Args:
        task: The task description.
        success: Whether the episode succeeded.
        steps: The steps in order, each a dict with ``observation``, ``response`` and
            ``action_valid``. Steps are numbered from 1.
        max_chars: Cap on the prompt length; when the trajectory does not fit, the earliest
            steps are dropped (the last step is always kept) and the prompt says so.
        max_field_chars: Cap on each observation / response.
        name_by_role: The workflow instruction asks to name objects by their role (False:
            ``WORKFLOW_INSTRUCTION_BY_NAME``, as the release's prompt).

    Returns:
        The prompt text, ending with a newline.
    """
    head = [INTRODUCTION, f"Task description: {one_line(task, max_field_chars)}",
            f"episode_success: {'success' if success else 'failure'}"]
    workflow = WORKFLOW_INSTRUCTION if name_by_role else WORKFLOW_INSTRUCTION_BY_NAME
    tail = [workflow if success else AVOIDANCE_INSTRUCTION, OUTPUT_INSTRUCTION]
    blocks = [_step_block(number, step, max_field_chars) for number, step in enumerate(steps, start=1)]
    budget = max_chars - sum(len(part) + 1 for part in head + tail) - 120  # 120: trajectory header
    kept: list[str] = []
    used = 0
    for block in reversed(blocks):
        if kept and used + len(block) + 1 > budget:
            break
        kept.append(block)
        used += len(block) + 1
    kept.reverse()
    omitted = len(blocks) - len(kept)
    if omitted:
        header = (f"Trajectory ({len(blocks)} steps; the first {omitted} are omitted for length, "
                  f"the last {len(kept)} are shown):")
    else:
        header = f"Trajectory ({len(blocks)} steps):"
    return "\n".join([*head, header, *kept, *tail]) + "\n"


def skill_target_json(summary: str, skill: str) -> str:
    """The SFT target of the analyzer: the JSON a teacher should return.

    Args:
        summary: The episode summary.
        skill: The episode skill.

    Returns:
        ``{"episode_summary": ..., "episode_skill": ...}`` as compact JSON text.
    """
    return json.dumps({"episode_summary": summary, "episode_skill": skill}, ensure_ascii=False)

"""The one prompt builder used by training, rollout and scoring.

A step prompt is plain text with fixed line markers, so that a skill can be injected after
the task line (``hindsight.policy.skill_injection``) and a prompt can be rebuilt exactly
from the trajectory table (the observations and actions of the earlier steps of the episode):

    Task: <task text>
    Known facts:                       (only when something was pinned)
    - <pinned observation>
    History:                           (only when there are earlier steps)
    Observation 3: <observation>
    Action 3: <action>
    ...
    Current observation: <observation>
    Valid actions: <a> | <b> | <c>     (when ``show_valid_actions``)
    Your turn. Reply with one valid action.

The response is the action itself; a model may put a reasoning segment first, in the form
``Thought: ...`` followed by a line ``Action: <action>``; ``parse_action`` strips it.

Pinning keeps what later steps need after it scrolls out of the history window: an
observation that matches one of ``pin_patterns`` (the cookbook's recipe, say) is kept under
"Known facts" for the rest of the episode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

TASK_PREFIX = "Task: "
TURN_LINE = "Your turn. Reply with one valid action."


@dataclass
class PromptConfig:
    """How a step prompt is built."""

    history_window: int = 3
    """How many earlier (observation, action) pairs the prompt shows."""
    show_valid_actions: bool = True
    """List the environment's valid actions in the prompt."""
    pin_patterns: list[str] = field(default_factory=lambda: [r"(?i)ingredients?:", r"(?i)directions?:"])
    """Regexes: an observation matching one is pinned under "Known facts" for the episode."""
    max_observation_chars: int = 1200
    """Longer observations are cut (keeping the start) so one step cannot fill the context."""


def one_line(text, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters plus
    " ..." when longer: how every prompt (step or analysis) shows a piece of text."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + " ..."


def update_pinned_facts(pinned: list[str], observation: str, config: PromptConfig) -> list[str]:
    """Return ``pinned`` plus ``observation`` if it matches a pin pattern and is new."""
    cleaned = one_line(observation, config.max_observation_chars)
    if cleaned and cleaned not in pinned and any(re.search(p, observation) for p in config.pin_patterns):
        return [*pinned, cleaned]
    return list(pinned)


def build_prompt(
    task: str,
    history: Sequence[tuple[str, str]],
    observation: str,
    valid_actions: Sequence[str],
    pinned_facts: Sequence[str] = (),
    config: PromptConfig | None = None,
    first_step_index: int = 0,
) -> str:
    """Build the prompt of one step.

    Args:
        task: The task text.
        history: All earlier (observation, action) pairs of the episode, oldest first; the
            prompt shows the last ``config.history_window`` of them.
        observation: The observation the agent acts on now.
        valid_actions: The actions the environment accepts now.
        pinned_facts: Observations kept for the whole episode (see ``update_pinned_facts``).
        config: Prompt settings.
        first_step_index: Step number of ``history[0]`` (for the "Observation k" labels).

    Returns:
        The prompt text, ending with the turn line and a newline.
    """
    config = config or PromptConfig()
    limit = config.max_observation_chars
    lines = [TASK_PREFIX + one_line(task, limit)]
    if pinned_facts:
        lines.append("Known facts:")
        lines.extend(f"- {fact}" for fact in pinned_facts)
    window = list(history)[-config.history_window :] if config.history_window > 0 else []
    if window:
        lines.append("History:")
        start = first_step_index + len(history) - len(window)
        for offset, (past_observation, past_action) in enumerate(window):
            step = start + offset
            lines.append(f"Observation {step}: {one_line(past_observation, limit)}")
            lines.append(f"Action {step}: {one_line(past_action, limit)}")
    lines.append(f"Current observation: {one_line(observation, limit)}")
    if config.show_valid_actions:
        lines.append("Valid actions: " + " | ".join(valid_actions))
    lines.append(TURN_LINE)
    return "\n".join(lines) + "\n"


def episode_prompts(
    task: str,
    observations: Sequence[str],
    actions: Sequence[str],
    valid_actions: Sequence[Sequence[str]],
    config: PromptConfig | None = None,
) -> list[str]:
    """Rebuild the prompt of every step of one episode from its table rows (step order)."""
    config = config or PromptConfig()
    prompts, pinned, history = [], [], []
    for observation, action, valid in zip(observations, actions, valid_actions):
        pinned = update_pinned_facts(pinned, observation, config)
        prompts.append(build_prompt(task, history, observation, valid, pinned, config))
        history.append((observation, action))
    return prompts


_ACTION_LINE = re.compile(r"(?im)^\s*action\s*:\s*(.+?)\s*$")


def parse_action(response: str) -> str:
    """The action inside a response: the last ``Action: ...`` line if there is one (a
    reasoning segment before it is dropped), else the first non-empty line."""
    matches = _ACTION_LINE.findall(response)
    if matches:
        return matches[-1].strip()
    for line in response.splitlines():
        if line.strip():
            return line.strip()
    return ""


def render_for_model(tokenizer, prompt: str, image_token: str | None = None) -> str:
    """Wrap a prompt in the tokenizer's chat template when it has one (instruction-tuned
    LLMs); the locally built tiny tokenizer has none and gets the plain prompt.

    With ``image_token`` (a vision policy's step with a screenshot, ``policy.screens``) the
    user turn is the prompt text followed by an image item (the template writes the model's
    image placeholder); without a chat template the token is appended to the prompt."""
    if image_token is not None:
        if getattr(tokenizer, "chat_template", None):
            content = [{"type": "text", "text": prompt}, {"type": "image"}]
            return tokenizer.apply_chat_template(
                [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
            )
        return prompt + image_token
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
    return prompt

"""The multi-turn layout: one episode is one growing token sequence.

    Task: <task text>                          header (the skill block after it, when any)
    Current observation: <observation 0>       turn 0: the observation segment
    Valid actions: <a> | <b>                   (when ``show_valid_actions``)
    Your turn. Reply with one valid action.
    <action 0 ids> EOS                         the sampled ids, exactly as sampled
    Current observation: <observation 1>       turn 1 ...

Token in / token out: the header and each observation segment are tokenized on their own
(``add_special_tokens=False``) and concatenated with the action ids the policy sampled; no
text is ever re-tokenized, and no chat template rewrites earlier turns (the segments are
plain text even for a tokenizer with a chat template). The header plus the first segment is
the step-wise prompt of step 0 (``prompts.build_prompt`` without history or pinned facts),
so a policy trained on step-wise prompts reads a familiar start.

When the context would pass ``max_length`` (minus the response budget), the oldest whole
turns are dropped and the header is kept (the model then re-reads the truncated context:
``cached_generation`` counts it); a header plus one segment still too long loses its oldest
tokens. Pinned facts are not needed while the turn that showed them is in the context.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

from hindsight.policy.encoding import truncate_prompt
from hindsight.policy.prompts import TASK_PREFIX, TURN_LINE, PromptConfig, one_line
from hindsight.policy.skill_injection import inject_skill

logger = logging.getLogger(__name__)

LAYOUTS = ("stepwise", "multiturn")
"""How a step's context is built: ``stepwise`` (a prompt per step with a history window,
the SEED paper's) or ``multiturn`` (the episode's one growing token sequence)."""


def header_text(task: str, skill: str | None, config: PromptConfig) -> str:
    """The episode's first lines: the task line, then the skill block when there is one."""
    text = TASK_PREFIX + one_line(task, config.max_observation_chars) + "\n"
    return inject_skill(text, skill) if skill else text


def segment_text(observation: str, valid_actions: Sequence[str], config: PromptConfig) -> str:
    """One turn's observation segment (what the environment says before the action)."""
    lines = [f"Current observation: {one_line(observation, config.max_observation_chars)}"]
    if config.show_valid_actions:
        lines.append("Valid actions: " + " | ".join(valid_actions))
    lines.append(TURN_LINE)
    return "\n".join(lines) + "\n"


def encode_text(tokenizer, text: str) -> list[int]:
    """Token ids of a piece of the sequence (no special tokens, no chat template)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass
class EpisodeContext:
    """One live episode's token sequence and the model's KV cache over it.

    ``ids`` is the context the model reads (header, then turns; after a truncation the
    oldest turns are gone); ``cache`` holds per layer the (key, value) tensors
    [1, heads, ``cached``, head_dim] of its first ``cached`` ids (None: nothing cached).
    """

    header_ids: list[int]
    """The header's ids (task line, skill block)."""
    turns: list[tuple[list[int], list[int]]] = field(default_factory=list)
    """Per turn in the context: (observation segment ids, action ids); the last turn's action
    is empty while it is being decided."""
    ids: list[int] = field(default_factory=list)
    """The context as the model reads it (header + turns, truncated)."""
    dropped_tokens: int = 0
    """How many tokens of the whole episode sequence the context no longer holds."""
    cache: Any = None
    """Per layer (key, value) over ``ids[:cached]``; None when nothing is cached."""
    cached: int = 0
    """How many leading ids of ``ids`` are in ``cache``."""
    reprefills: int = 0
    """How many times the context was truncated and read again from the start."""

    @classmethod
    def start(cls, tokenizer, task: str, skill: str | None, config: PromptConfig) -> "EpisodeContext":
        """A fresh context holding the header only."""
        return cls.from_header(tokenizer, header_text(task, skill, config))

    @classmethod
    def from_header(cls, tokenizer, text: str) -> "EpisodeContext":
        """A fresh context holding the given header text (``header_text``'s output) only:
        how ``start`` begins, and how multi-turn SFT replays a stored episode
        (``training.episode_sft``)."""
        header = encode_text(tokenizer, text)
        return cls(header_ids=header, ids=list(header))

    @property
    def header_length(self) -> int:
        """How many leading ids of ``ids`` are the header (0 when it was cut)."""
        return len(self.header_ids) if self.ids[: len(self.header_ids)] == self.header_ids else 0

    def begin_turn(self, segment_ids: Sequence[int], budget: int) -> bool:
        """Append the observation segment of a new turn, truncating to ``budget`` tokens.

        Returns:
            Whether the context was truncated (its cache is then dropped: re-prefill).
        """
        self.turns.append((list(segment_ids), []))
        self.ids.extend(segment_ids)
        if len(self.ids) <= budget:
            return False
        while len(self.turns) > 1 and len(self.ids) > budget:
            segment, action = self.turns.pop(0)
            self.dropped_tokens += len(segment) + len(action)
            self.ids = list(self.header_ids) + [token for turn in self.turns for part in turn for token in part]
        if len(self.ids) > budget:
            self.ids, cut = truncate_prompt(self.ids, budget)
            self.dropped_tokens += cut
        self.cache, self.cached = None, 0
        self.reprefills += 1
        return True

    def end_turn(self, action_ids: Sequence[int]) -> None:
        """Append the sampled action ids to the current turn."""
        segment, _ = self.turns[-1]
        self.turns[-1] = (segment, list(action_ids))
        self.ids.extend(action_ids)

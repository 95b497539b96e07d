"""One turn of the multi-turn layout for the rollout engine's live episodes.

Each live ``Episode`` gets an ``EpisodeContext`` (``policy.episode_context``) when it starts
its first turn: the header (task line, the episode's skill once) and then, turn after turn,
its observation segment and the sampled action ids. ``cached_generation.generate_turn``
prefills only what is new in each context and decodes all of them in one batch.
"""

from __future__ import annotations

from typing import Sequence

import torch

from hindsight.policy import Policy
from hindsight.policy.cached_generation import generate_turn
from hindsight.policy.episode_context import EpisodeContext
from hindsight.policy.generation import Generation, SamplingConfig
from hindsight.policy.prompts import PromptConfig
from hindsight.rollout.live_episode import Episode


def multiturn_generations(
    policy: Policy,
    episodes: Sequence[Episode],
    prompt: PromptConfig,
    sampling: SamplingConfig,
    generator: torch.Generator,
) -> tuple[list[Generation], int]:
    """The live episodes' next actions (their contexts grow in place).

    Returns:
        (one ``Generation`` per episode, how many contexts were truncated and re-read).
    """
    for episode in episodes:
        if episode.context is None:
            episode.context = EpisodeContext.start(policy.tokenizer, episode.task_text, episode.skill, prompt)
    generations, reprefills = generate_turn(
        policy,
        [episode.context for episode in episodes],
        [episode.observation for episode in episodes],
        [episode.valid_actions for episode in episodes],
        prompt=prompt,
        config=sampling,
        generator=generator,
    )
    return generations, reprefills

"""The one interface every skill teacher implements.

A teacher reads finished episodes and writes one ``SkillRecord`` per episode, in order.
Failures (a parse error, an unreachable endpoint) give records with ``parse_ok=False``;
they are counted (``parse_rate``), never raised.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

from hindsight.skills.analysis_prompt import DEFAULT_MAX_CHARS, DEFAULT_MAX_FIELD_CHARS, build_analysis_prompt
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.records import SkillRecord


class Teacher(ABC):
    """Writes a hindsight skill for each finished episode."""

    name: str = "teacher"
    found_metric: str = "opd/skill_parse_rate"
    """What the share of episodes that got a skill is called in the RL metrics: a parse
    rate for a teacher that writes, a hit rate for one that looks skills up."""

    @abstractmethod
    def write_skills(self, episodes: Sequence[EpisodeView]) -> list[SkillRecord]:
        """Return one record per episode, in the same order."""


def episode_analysis_prompt(
    episode: EpisodeView, *, max_chars: int = DEFAULT_MAX_CHARS, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
    name_by_role: bool = True,
) -> str:
    """The analysis prompt of an episode (the same text for every teacher and the SFT set).

    Args:
        episode: The episode.
        max_chars: Cap on the prompt length (see ``build_analysis_prompt``).
        max_field_chars: Cap on each observation / response.
        name_by_role: Ask to name objects by their role (``build_analysis_prompt``).

    Returns:
        The prompt text.
    """
    return build_analysis_prompt(
        episode.task, episode.success, episode.analysis_steps(), max_chars=max_chars, max_field_chars=max_field_chars,
        name_by_role=name_by_role,
    )

"""The analyzer's SFT set (Stage 1, step 4): (analysis prompt -> skill) pairs.

The prompt is built exactly as the teachers build it, so the SFT-trained policy sees at
analysis time the text it was trained on; the target is what the analyzer must write:

- ``json`` language: the JSON summary + skill (``skill_target_json``), prompt cut to
  ``analyzer.max_prompt_chars`` (each field to ``analyzer.max_field_chars``);
- ``compact`` language: the written form of the compact skill (``compact.written_skill``)
  after the whole-episode compact prompt; ``templates`` holds the grammar's alphabet of the
  episode (``compact.episode_templates``) so the held-out pairs can be decoded later exactly
  as the RL loop decodes.

A deterministic share of the episodes is marked ``held_out`` (never trained on) so the
analyzer's parse rate and exact match can be measured after Stage 1.
"""

from __future__ import annotations

import logging
import random

import pandas as pd

from hindsight.skills.analysis_prompt import skill_target_json
from hindsight.skills.analyzers import AnalyzerConfig
from hindsight.skills.compact import compact_analysis_prompt, episode_templates, written_skill
from hindsight.skills.episode_views import EpisodeView, episodes_from_table
from hindsight.skills.teachers import episode_analysis_prompt

logger = logging.getLogger(__name__)

SFT_COLUMNS = ("prompt", "response", "episode_id", "skill", "templates", "held_out")


def held_out_episodes(episode_ids: list[str], fraction: float, seed: int) -> set[str]:
    """A deterministic ``fraction`` of the episodes (none when the fraction is 0; otherwise at
    least one, and never all of them when there are two or more).

    Args:
        episode_ids: Distinct episode ids.
        fraction: Share held out, in [0, 1).
        seed: Seed of the shuffle.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"held-out fraction must be in [0, 1), got {fraction}")
    if fraction == 0.0 or not episode_ids:
        return set()
    shuffled = sorted(episode_ids)
    random.Random(seed).shuffle(shuffled)
    count = min(max(1, round(fraction * len(shuffled))), max(len(shuffled) - 1, 1))
    return set(shuffled[:count])


def analyzer_pair(episode: EpisodeView, summary: str, skill: str, analyzer: AnalyzerConfig) -> dict:
    """One (prompt, response) pair in the analyzer's language, with the skill and the
    episode's grammar alphabet (compact) or an empty one (json)."""
    if analyzer.compact:
        return {
            "prompt": compact_analysis_prompt(episode),
            "response": written_skill(skill),
            "skill": skill,
            "templates": episode_templates(episode, analyzer.concrete),
        }
    return {
        "prompt": episode_analysis_prompt(episode, **analyzer.prompt_options()),
        "response": skill_target_json(summary, skill),
        "skill": skill,
        "templates": [],
    }


def analyzer_sft_examples(
    trajectories: pd.DataFrame,
    skills: pd.DataFrame,
    analyzer: AnalyzerConfig | None = None,
    *,
    held_out_fraction: float = 0.0,
    seed: int = 0,
) -> pd.DataFrame:
    """Build (analysis prompt -> skill) examples for the accepted, parsed skills.

    Args:
        trajectories: The trajectory table the skills were written from.
        skills: The Skills table (``skills_table``).
        analyzer: The analyzer settings (language, caps); default ``AnalyzerConfig()``.
        held_out_fraction: Share of the episodes marked ``held_out``.
        seed: Seed of the held-out choice.

    Returns:
        DataFrame with columns ``SFT_COLUMNS``, in the skills' order.

    Raises:
        ValueError: A column is missing, or a skill's episode is not in ``trajectories``.
    """
    if analyzer is None:
        analyzer = AnalyzerConfig()
    missing = [column for column in ("episode_id", "summary", "skill", "accepted", "parse_ok") if column not in skills]
    if missing:
        raise ValueError(f"skills table: missing column(s) {', '.join(missing)}")
    kept = skills[skills["accepted"].astype(bool) & skills["parse_ok"].astype(bool)]
    if kept.empty:
        logger.warning("no accepted skills: the analyzer SFT set is empty")
        return pd.DataFrame(columns=list(SFT_COLUMNS))
    wanted = set(kept["episode_id"].astype(str))
    rows = trajectories[trajectories["episode_id"].astype(str).isin(wanted)]
    episodes = {episode.episode_id: episode for episode in episodes_from_table(rows)}
    absent = sorted(wanted - set(episodes))
    if absent:
        raise ValueError(f"skills table: episode(s) {', '.join(absent[:5])} not found in the trajectory table")
    held_out = held_out_episodes(sorted(wanted), held_out_fraction, seed)
    examples = [
        {
            **analyzer_pair(episodes[str(row.episode_id)], row.summary, row.skill, analyzer),
            "episode_id": str(row.episode_id),
            "held_out": str(row.episode_id) in held_out,
        }
        for row in kept.itertuples(index=False)
    ]
    logger.info(
        "analyzer SFT set (%s): %d examples from %d skills, %d held out",
        analyzer.language, len(examples), len(skills), len(held_out),
    )
    return pd.DataFrame(examples, columns=list(SFT_COLUMNS))

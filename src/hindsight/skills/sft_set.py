"""The analyzer's SFT set (Stage 1, step 4): (analysis prompt -> skill JSON) pairs of the
accepted skills. The prompt is built exactly as the teachers build it, so the SFT-trained
policy sees at analysis time the text it was trained on.
"""

from __future__ import annotations

import logging

import pandas as pd

from hindsight.skills.analysis_prompt import DEFAULT_MAX_CHARS, skill_target_json
from hindsight.skills.episode_views import episodes_from_table
from hindsight.skills.teachers import episode_analysis_prompt

logger = logging.getLogger(__name__)

SFT_COLUMNS = ("prompt", "response", "episode_id")


def analyzer_sft_examples(
    trajectories: pd.DataFrame, skills: pd.DataFrame, *, max_prompt_chars: int = DEFAULT_MAX_CHARS
) -> pd.DataFrame:
    """Build (analysis prompt -> JSON target) examples for the accepted, parsed skills.

    Args:
        trajectories: The trajectory table the skills were written from.
        skills: The Skills table (``skills_table``).
        max_prompt_chars: Cap on each analysis prompt's length (as the teachers use).

    Returns:
        DataFrame with columns ``prompt``, ``response``, ``episode_id``, in the skills' order.
    """
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
    examples = [
        {
            "prompt": episode_analysis_prompt(episodes[str(row.episode_id)], max_chars=max_prompt_chars),
            "response": skill_target_json(row.summary, row.skill),
            "episode_id": str(row.episode_id),
        }
        for row in kept.itertuples(index=False)
    ]
    logger.info("analyzer SFT set: %d examples from %d skills", len(examples), len(skills))
    return pd.DataFrame(examples, columns=list(SFT_COLUMNS))

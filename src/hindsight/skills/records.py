"""What a teacher produces for one episode (``SkillRecord``), the shared path from a raw
teacher output to a record (every teacher's text goes through ``parse_skill_json``), and the
one builder of the Skills table (``skills_table``; columns ``SKILLS_TABLE_COLUMNS``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from hindsight.data.schema import SKILLS_TABLE_COLUMNS, typed_table
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.parsing import parse_skill_json

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SkillRecord:
    """A teacher's skill for one episode; ``parse_ok`` False means no skill (and empty
    ``summary`` / ``skill``), never an error."""

    episode_id: str
    group_id: str
    success: bool
    summary: str
    skill: str
    teacher: str
    parse_ok: bool
    raw_output: str


def record_from_output(episode: EpisodeView, raw_output: str | None, teacher: str) -> SkillRecord:
    """Parse a teacher's raw output into the record of ``episode``.

    Args:
        episode: The episode the output is about.
        raw_output: The teacher's text, or None when the teacher produced nothing.
        teacher: The teacher's name.

    Returns:
        The record (``parse_ok`` False when the output holds no valid skill JSON).
    """
    fields = parse_skill_json(raw_output)
    if fields is None:
        logger.debug("teacher %s: no skill parsed for episode %s", teacher, episode.episode_id)
    return SkillRecord(
        episode_id=episode.episode_id,
        group_id=episode.group_id,
        success=episode.success,
        summary=fields["episode_summary"] if fields else "",
        skill=fields["episode_skill"] if fields else "",
        teacher=teacher,
        parse_ok=fields is not None,
        raw_output=raw_output or "",
    )


def parse_rate(records: Sequence[SkillRecord]) -> float:
    """Fraction of records whose output parsed into a skill (``opd/skill_parse_rate``).

    Args:
        records: Skill records.

    Returns:
        The fraction in [0, 1]; 0.0 for no records.
    """
    return sum(record.parse_ok for record in records) / len(records) if records else 0.0


def skills_table(
    records: Sequence[SkillRecord],
    accepted: Sequence[bool] | None = None,
    delta_success: Sequence[float] | None = None,
) -> pd.DataFrame:
    """The Skills table (``hindsight.data.schema.SKILLS_TABLE_COLUMNS``): one row per record.

    A record that parsed nothing keeps its empty ``summary`` and ``skill`` ("").

    Args:
        records: Skill records.
        accepted: Per record, whether validation kept the skill; default: every parsed
            skill is accepted (no validation).
        delta_success: Per record, the success-rate gain validation measured (NaN where
            there was none); default all NaN.

    Returns:
        DataFrame with columns ``SKILLS_TABLE_COLUMNS``; success, accepted and parse_ok
        bool, delta_success float.
    """
    accepted = [record.parse_ok for record in records] if accepted is None else accepted
    delta_success = [math.nan] * len(records) if delta_success is None else delta_success
    rows = [
        {
            "episode_id": record.episode_id,
            "group_id": record.group_id,
            "success": bool(record.success),
            "summary": record.summary,
            "skill": record.skill,
            "teacher": record.teacher,
            "accepted": bool(kept),
            "delta_success": float(delta),
            "parse_ok": bool(record.parse_ok),
        }
        for record, kept, delta in zip(records, accepted, delta_success, strict=True)
    ]
    return typed_table(rows, SKILLS_TABLE_COLUMNS)

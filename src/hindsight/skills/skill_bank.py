"""The fixed skill bank: the teacher of the "without on-policy skills" ablation.

Instead of the current policy, the bank answers: the accepted Stage-1 skill of the
episode's task (``group_id``), else the most frequent accepted success skill of its task
type, else nothing (that episode then has no distillation signal, like an analysis that
does not parse).
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.records import SkillRecord
from hindsight.skills.teachers import Teacher


def skill_bank_from_table(skills: pd.DataFrame) -> dict[str, str]:
    """group_id -> the accepted Stage-1 skill of that task (a success skill when there is
    one), and task_type -> its most frequent accepted success skill, as a fallback."""
    accepted = skills[skills["accepted"] & skills["parse_ok"]]
    bank: dict[str, str] = {}
    for group_id, group in accepted.groupby("group_id"):
        successes = group[group["success"]]
        bank[group_id] = (successes if len(successes) else group)["skill"].iloc[0]
    game = accepted["group_id"].str.split("/").str[1:-2].str.join("/")  # a Gymnasium id's game holds a "/"
    for task_type, group in accepted[accepted["success"]].groupby(game):
        bank.setdefault(task_type, group["skill"].mode().iloc[0])
    return bank


class SkillBankTeacher(Teacher):
    """Looks each episode's skill up in a fixed bank (``skill_bank_from_table``)."""

    name = "fixed_bank"
    found_metric = "opd/bank_hit_rate"

    def __init__(self, bank: dict[str, str]) -> None:
        self.bank = dict(bank)

    def write_skills(self, episodes: Sequence[EpisodeView]) -> list[SkillRecord]:
        records = []
        for episode in episodes:
            skill = self.bank.get(episode.group_id) or self.bank.get(episode.task_type)
            records.append(
                SkillRecord(
                    episode_id=episode.episode_id,
                    group_id=episode.group_id,
                    success=episode.success,
                    summary="",
                    skill=skill or "",
                    teacher=self.name,
                    parse_ok=skill is not None,
                    raw_output="",
                )
            )
        return records

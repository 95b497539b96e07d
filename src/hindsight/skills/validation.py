"""The validation filter of SEED's Stage 1 (docs/fidelity.md, SEED) and the validated
Skills table (its shape is ``hindsight.skills.records.skills_table``).

A skill is kept when, rolling the same task out again with the skill injected, the number of
successes rises by at least ``min_success_gain`` AND the success rate rises by at least
``min_rate_gain`` over the plain rollouts (paper: +1 and +0.125 with 8 rollouts each).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd

from hindsight.skills.records import SkillRecord, skills_table
_TOLERANCE = 1e-9  # rates like 3/8 - 2/8 compare exactly at the boundary despite rounding


@dataclass(frozen=True)
class ValidationOutcome:
    """Success counts of the plain and the skill-injected rollouts of one skill's task."""

    plain_successes: int
    plain_trials: int
    skill_successes: int
    skill_trials: int

    @property
    def delta_success_rate(self) -> float:
        """Skill success rate minus plain success rate."""
        return self.skill_successes / self.skill_trials - self.plain_successes / self.plain_trials


def skill_passes_validation(
    plain_successes: int,
    plain_trials: int,
    skill_successes: int,
    skill_trials: int,
    *,
    min_success_gain: int = 1,
    min_rate_gain: float = 0.125,
) -> bool:
    """Whether a skill passes the filter (both gains at least their minimum, boundaries included).

    Args:
        plain_successes: Successes of the plain rollouts.
        plain_trials: Number of plain rollouts (> 0).
        skill_successes: Successes of the skill-injected rollouts.
        skill_trials: Number of skill-injected rollouts (> 0).
        min_success_gain: Minimum rise in the success count.
        min_rate_gain: Minimum rise in the success rate.

    Returns:
        True if the skill is kept.
    """
    if plain_trials <= 0 or skill_trials <= 0:
        raise ValueError(f"trial counts must be positive, got plain_trials={plain_trials}, skill_trials={skill_trials}")
    for name, successes, trials in (("plain", plain_successes, plain_trials), ("skill", skill_successes, skill_trials)):
        if not 0 <= successes <= trials:
            raise ValueError(f"{name}_successes={successes} must lie in [0, {name}_trials={trials}]")
    count_gain = skill_successes - plain_successes
    rate_gain = skill_successes / skill_trials - plain_successes / plain_trials
    return count_gain >= min_success_gain and rate_gain >= min_rate_gain - _TOLERANCE


def validated_skills_table(
    records: Sequence[SkillRecord],
    validation: Mapping[str, ValidationOutcome] | None = None,
    *,
    min_success_gain: int = 1,
    min_rate_gain: float = 0.125,
) -> pd.DataFrame:
    """The Skills table (``skills_table``) of a teacher's records, with the filter's verdicts.

    Without ``validation`` every parsed skill is accepted and ``delta_success`` is NaN. With
    it, a skill is accepted when it parsed, was validated (its episode id is a key) and
    passes ``skill_passes_validation``; ``delta_success`` is the success-rate gain (NaN when
    the episode was not validated).

    Args:
        records: Skill records.
        validation: Optional outcomes keyed by episode id.
        min_success_gain: See ``skill_passes_validation``.
        min_rate_gain: See ``skill_passes_validation``.

    Returns:
        DataFrame with columns ``SKILLS_TABLE_COLUMNS``, one row per record.
    """
    if validation is None:
        return skills_table(records)
    accepted, delta_success = [], []
    for record in records:
        outcome = validation.get(record.episode_id)
        if outcome is None:
            accepted.append(False)
            delta_success.append(math.nan)
            continue
        delta_success.append(outcome.delta_success_rate)
        accepted.append(
            record.parse_ok
            and skill_passes_validation(
                outcome.plain_successes, outcome.plain_trials, outcome.skill_successes, outcome.skill_trials,
                min_success_gain=min_success_gain, min_rate_gain=min_rate_gain,
            )
        )
    return skills_table(records, accepted, delta_success)

"""Which skill each episode is re-scored with: its own, or an unrelated one (a control).

SEED re-scores an episode's actions with the skill written for that episode. The "unrelated
skill" control (docs/fidelity.md, SEED) keeps everything else, the skills still written the same
way, and only permutes which episode's skill each episode is re-scored (distilled) with: a skill
written for a task of another task type where the batch has one. It separates what the skill
says from the mere extra context. (The Stage-1 premise check draws its unrelated control
otherwise: a seeded derangement of the own skills of each outcome, ``stage1.premise_controls``.)

- ``unrelated_sources``: target episode -> the episode whose skill it gets, preferring
  another task type, then another task (group), then any other episode with a skill;
- ``unrelated_skills``: the same as episode -> skill text;
- ``assigned_skills``: the RL loop's step (``training.rl.skill_assignment``): own skills
  unchanged, or each episode with a skill given an unrelated one, and the metrics that
  show which happened.
"""

from __future__ import annotations

from typing import Collection, Sequence

from hindsight.skills.episode_views import EpisodeView

SKILL_ASSIGNMENTS = ("own", "unrelated")
"""own: an episode is re-scored with its own skill (SEED); unrelated: with the skill of an
episode of another task type (the control)."""


def unrelated_sources(
    episodes: Sequence[EpisodeView], with_skill: Collection[str], targets: Collection[str] | None = None
) -> dict[str, str]:
    """Target episode id -> the id of the episode whose skill it is given.

    The candidates are the other episodes in ``with_skill``: those of another task type
    where there are any, else those of another task (``group_id``), else any other one.
    Targets with the same candidates take them in turn, in batch order, so the skills
    spread over the batch (k targets of one type use min(k, candidates) distinct skills of
    the other types); the result is deterministic.

    Args:
        episodes: The batch's episodes, in order.
        with_skill: Ids of the episodes that have a skill to give.
        targets: Ids of the episodes to give one (None: every episode).

    Returns:
        One entry per target that has a candidate (a batch with one skilled episode gives
        that episode none).
    """
    skilled = [episode for episode in episodes if episode.episode_id in with_skill]
    sources = {}
    taken: dict[tuple[str, ...], int] = {}  # how many targets drew from each candidate list
    for episode in episodes:
        if targets is not None and episode.episode_id not in targets:
            continue
        others = [o for o in skilled if o.episode_id != episode.episode_id]
        candidates = tuple(
            o.episode_id
            for o in (
                [o for o in others if o.task_type != episode.task_type]
                or [o for o in others if o.group_id != episode.group_id]
                or others
            )
        )
        if candidates:
            turn = taken[candidates] = taken.get(candidates, -1) + 1
            sources[episode.episode_id] = candidates[turn % len(candidates)]
    return sources


def unrelated_skills(episodes: Sequence[EpisodeView], skill_of_episode: dict[str, str]) -> dict[str, str]:
    """Each episode gets another episode's skill, of another task type where there is one
    (``unrelated_sources`` over every episode)."""
    sources = unrelated_sources(episodes, skill_of_episode)
    return {target: skill_of_episode[source] for target, source in sources.items()}


def assigned_skills(
    episodes: Sequence[EpisodeView], skill_of_episode: dict[str, str], assignment: str
) -> tuple[dict[str, str], dict[str, float]]:
    """The skill each episode is re-scored with, under ``assignment`` (``SKILL_ASSIGNMENTS``).

    ``own`` returns ``skill_of_episode`` as it is. ``unrelated`` gives every episode that has
    a skill of its own another episode's skill (``unrelated_sources``), so the same episodes
    are distilled as with ``own``, only from other skills (but for a batch with a single
    skilled episode: it has no other skill to take and gets none).

    Args:
        episodes: The batch's episodes.
        skill_of_episode: Episode id -> its own usable skill (episodes without one left out).
        assignment: own or unrelated.

    Returns:
        (episode id -> the skill to re-score with, metrics): ``opd/skill_unrelated_share``,
        the share of episodes given a skill whose skill was written for another task type,
        and ``opd/skill_reassigned_share``, the share given another episode's skill (both 0
        with ``own``; with ``unrelated`` the first is below 1 only where a batch has one
        task type).
    """
    if assignment not in SKILL_ASSIGNMENTS:
        raise ValueError(f"skill assignment must be one of {SKILL_ASSIGNMENTS}, got {assignment!r}")
    if assignment == "own":
        sources = {episode_id: episode_id for episode_id in skill_of_episode}
    else:
        sources = unrelated_sources(episodes, skill_of_episode, targets=skill_of_episode)
    task_type = {episode.episode_id: episode.task_type for episode in episodes}
    given = len(sources) or 1
    metrics = {
        "opd/skill_unrelated_share": sum(task_type.get(s) != task_type.get(t) for t, s in sources.items()) / given,
        "opd/skill_reassigned_share": sum(s != t for t, s in sources.items()) / given,
    }
    return {target: skill_of_episode[source] for target, source in sources.items()}, metrics

"""How well the world model judges the policy's own real episodes, and what it calls won when
it drives them itself (docs/transition_sources.md, "The world model's judgement").

Two halves, both on the start policy's held-out real episodes (``world_model_policy_episodes``
drawn out by ``transitions.is_heldout``: never trained on):

- **Judged endings** (``judged_endings``): each held-out episode is replayed step by step on
  its real observations and actions (teacher-forced), the world model answering every step;
  its judged ending is its first outcome answer: ``won`` at the first ``SOLVED_MARKER``,
  ``lost`` at the first ``FAILED_MARKER``, ``not_ended`` when it answers neither (in the
  world-model environment the episode then runs to the step limit and ends lost). The real
  ending is ``won``, ``lost_ended`` (the environment ended it lost before the step limit,
  ``transitions.ended_lost``) or ``lost_cut`` (cut at the step limit). The outcome agrees
  when judged won is real won (the reward); the ending agrees when, besides, it ends where
  and how the real one did: ``won`` at the last step, ``lost`` at the last step of a
  ``lost_ended`` episode, ``not_ended`` for a ``lost_cut`` one (done and reward alike).
  Only the first answer tokens decide a judgement (``judging_tokens``): greedy decoding, so
  they are the first tokens of the full answer the world-model environment reads.
- **Imagination** (``imagination_summary``): the world model drives episodes with the start
  policy from the starts of the held-out episodes' tasks (``world_model.environment``, no
  imagined turns), and the share it calls won stands next to the real success rate of the
  same policy on the same tasks (its real episodes of them).

``calibration_summary`` and ``imagination_summary`` are plain counts and shares of those
tables; ``calibration_metrics`` names them for MLflow.
"""

from __future__ import annotations

import math
import random
from typing import Callable, Sequence

import pandas as pd

from hindsight.data.outcomes import episode_outcomes
from hindsight.envs.base import EnvironmentSpec
from hindsight.rollout.tasks import TaskRef
from hindsight.world_model.transitions import FAILED_MARKER, SOLVED_MARKER, ended_lost, is_failed, is_solved, transition_prompt

ENDING_COLUMNS = [
    "episode_id", "group_id", "task_type", "length", "real_ending", "judged_ending", "judged_step", "outcome_agrees", "ending_agrees",
]
"""One row per held-out real episode (``world_model_endings``); ``judged_step`` is -1 when not ended."""
REAL_ENDINGS = ("won", "lost_ended", "lost_cut")
CALIBRATION_COLUMNS = ["real_ending", "episodes", "judged_won", "judged_lost", "judged_not_ended", "outcome_agreement", "ending_agreement"]
"""``calibration_summary``: rows won, lost (both lost kinds), lost_ended, lost_cut, all."""
IMAGINATION_COLUMNS = ["task_type", "tasks", "imagined_episodes", "imagined_won_share", "real_episodes", "real_success_rate"]
"""``imagination_summary``: one row per task type and ``all``."""


def real_ending(episode: pd.DataFrame, max_steps: int | None) -> str:
    """``won``, ``lost_ended`` (ended lost by the environment before the step limit) or
    ``lost_cut`` (any other lost episode: cut at the step limit)."""
    if bool(episode["won"].any()):
        return "won"
    return "lost_ended" if ended_lost(episode, max_steps) else "lost_cut"


def first_judgement(answers: Sequence[str]) -> tuple[str, int]:
    """The first outcome among a world model's answers to an episode's steps, in step order:
    (``won`` | ``lost`` | ``not_ended``, its step; -1 when not ended)."""
    for step, answer in enumerate(answers):
        if is_solved(answer):
            return "won", step
        if is_failed(answer):
            return "lost", step
    return "not_ended", -1


def ending_agrees(real: str, judged: str, judged_step: int, length: int) -> bool:
    """Whether the judged ending is the real one, at the same step (module docstring)."""
    if real == "lost_cut":
        return judged == "not_ended"
    return judged == {"won": "won", "lost_ended": "lost"}[real] and judged_step == length - 1


def step_prompts(table: pd.DataFrame, *, history: int, max_chars: int) -> pd.DataFrame:
    """The world model's prompt for every step of every episode of ``table`` (columns
    ``episode_id``, ``step``, ``prompt``; episodes and steps in order)."""
    rows = []
    for episode_id, episode in table.sort_values(["episode_id", "step"]).groupby("episode_id", sort=True):
        observations, actions = episode["observation"].astype(str).tolist(), episode["action"].astype(str).tolist()
        task = str(episode["task"].iloc[0])
        for t in range(len(episode)):
            past = list(zip(observations[:t], actions[:t]))[-history:] if history else []
            prompt = transition_prompt(task, past, observations[t], actions[t], max_chars=max_chars)
            rows.append({"episode_id": str(episode_id), "step": int(episode["step"].iloc[t]), "prompt": prompt})
    return pd.DataFrame(rows, columns=["episode_id", "step", "prompt"])


def judged_endings(
    table: pd.DataFrame, predict: Callable[[list[str]], list[str]], *, history: int, max_chars: int, max_steps: int | None
) -> pd.DataFrame:
    """Each episode of ``table`` judged by the world model, teacher-forced (module docstring).

    Args:
        table: Real trajectory rows (the held-out policy episodes).
        predict: The world model's answers to a list of prompts (greedy).
        history: Earlier steps in a prompt (``world_model.query.history``).
        max_chars: Longest observation shown.
        max_steps: The environment's step limit (tells ``lost_ended`` from ``lost_cut``).

    Returns:
        ``ENDING_COLUMNS``, one row per episode.
    """
    if table.empty:
        return pd.DataFrame(columns=ENDING_COLUMNS)
    prompts = step_prompts(table, history=history, max_chars=max_chars)
    prompts["answer"] = predict(prompts["prompt"].tolist())
    answers = prompts.groupby("episode_id", sort=False)["answer"].apply(list)
    rows = []
    for episode_id, episode in table.sort_values(["episode_id", "step"]).groupby("episode_id", sort=True):
        real = real_ending(episode, max_steps)
        judged, step = first_judgement(answers[str(episode_id)])
        rows.append({
            "episode_id": str(episode_id), "group_id": str(episode["group_id"].iloc[0]), "task_type": str(episode["task_type"].iloc[0]),
            "length": len(episode), "real_ending": real, "judged_ending": judged, "judged_step": step,
            "outcome_agrees": (judged == "won") == (real == "won"), "ending_agrees": ending_agrees(real, judged, step, len(episode)),
        })
    return pd.DataFrame(rows, columns=ENDING_COLUMNS)


def judging_tokens(tokenizer, margin: int = 2) -> int:
    """Answer tokens enough to read an outcome marker (the longer marker's tokens + ``margin``)."""
    return max(len(tokenizer.encode(marker, add_special_tokens=False)) for marker in (SOLVED_MARKER, FAILED_MARKER)) + margin


def _share(mask: pd.Series) -> float:
    return float(mask.mean()) if len(mask) else math.nan


def calibration_summary(endings: pd.DataFrame) -> pd.DataFrame:
    """Per real ending (won, lost, lost_ended, lost_cut, all): the episodes, how the world
    model judged them, and the shares whose outcome and whose ending agree."""
    parts = {
        "won": endings["real_ending"] == "won", "lost": endings["real_ending"] != "won",
        "lost_ended": endings["real_ending"] == "lost_ended", "lost_cut": endings["real_ending"] == "lost_cut",
        "all": pd.Series(True, index=endings.index, dtype=bool),
    }
    rows = []
    for name, mask in parts.items():
        part = endings[mask]
        judged = part["judged_ending"]
        rows.append({
            "real_ending": name, "episodes": len(part), "judged_won": int((judged == "won").sum()),
            "judged_lost": int((judged == "lost").sum()), "judged_not_ended": int((judged == "not_ended").sum()),
            "outcome_agreement": _share(part["outcome_agrees"].astype(bool)), "ending_agreement": _share(part["ending_agrees"].astype(bool)),
        })
    return pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)


def imagination_summary(imagined: pd.DataFrame, real: pd.DataFrame) -> pd.DataFrame:
    """Per task type and ``all``: the share of imagined episodes the world model called won,
    and the real success rate of the same policy on the same tasks (``real``: its real
    episodes; only the imagined tasks' count)."""
    dreamt = episode_outcomes(imagined, keys=["group_id", "task_type"])
    played = episode_outcomes(real[real["group_id"].isin(set(dreamt["group_id"]))], keys=["group_id", "task_type"])
    rows = []
    for name in sorted(dreamt["task_type"].unique()) + ["all"]:
        mine = dreamt if name == "all" else dreamt[dreamt["task_type"] == name]
        theirs = played if name == "all" else played[played["task_type"] == name]
        rows.append({
            "task_type": name, "tasks": int(mine["group_id"].nunique()), "imagined_episodes": len(mine),
            "imagined_won_share": _share(mine["success"].astype(bool)), "real_episodes": len(theirs),
            "real_success_rate": _share(theirs["success"].astype(bool)),
        })
    return pd.DataFrame(rows, columns=IMAGINATION_COLUMNS)


def calibration_metrics(summary: pd.DataFrame, imagination: pd.DataFrame) -> dict[str, float]:
    """``world_model/calibration/<real ending>_{episodes,outcome_agreement,ending_agreement}``
    and ``world_model/imagined_{won_share,real_success_rate,episodes}`` (NaN: none)."""
    metrics: dict[str, float] = {}
    for row in summary.itertuples(index=False):
        prefix = f"world_model/calibration/{row.real_ending}"
        metrics[f"{prefix}_episodes"] = float(row.episodes)
        metrics[f"{prefix}_outcome_agreement"] = float(row.outcome_agreement)
        metrics[f"{prefix}_ending_agreement"] = float(row.ending_agreement)
    overall = imagination[imagination["task_type"] == "all"]
    for column, name in (("imagined_won_share", "won_share"), ("real_success_rate", "real_success_rate"), ("imagined_episodes", "episodes")):
        metrics[f"world_model/imagined_{name}"] = float(overall[column].iloc[0]) if len(overall) else math.nan
    return metrics


def imagined_tasks(heldout: pd.DataFrame, specs: Sequence[EnvironmentSpec], count: int, seed: int) -> list[TaskRef]:
    """The tasks of the held-out episodes to imagine: a fixed-seed draw of at most ``count``,
    as task references on the run's game specs."""
    groups = sorted(heldout["group_id"].astype(str).unique()) if len(heldout) else []
    drawn = sorted(random.Random(seed).sample(groups, min(count, len(groups))))
    by_game = {(spec.env, spec.game): spec for spec in specs}
    tasks = []
    for group in drawn:
        env, game, split, seed_text = group.rsplit("/", 3)
        if (env, game) not in by_game:
            raise ValueError(f"world-model calibration: task {group!r} is of no game of this run")
        tasks.append(TaskRef(by_game[env, game], int(seed_text), split))
    return tasks

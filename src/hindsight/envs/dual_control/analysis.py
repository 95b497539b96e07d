"""What only analysis may read of a dual-control task: its facts, its gold sequence, its progress.

The agent gets none of this (``env`` keeps ``info`` to the project's keys, the Gymnasium
wrapper drops ``score`` and refuses ``gold_actions()``); evaluation breakdowns, the expert
collection's tests and the benchmark's own checks read it here, by (split, task seed):

    task_labels(split, seed)    breakdown -> the task's groups: intent, outcome (fix or
                                transfer), issues (how many faults), persona, fault families
    gold_actions(split, seed)   the gold solver's action sequence
    progress(session)           the share of the final check's starting findings cleared
                                (1.0 once won): the dense score the agent never sees
"""

from __future__ import annotations

from hindsight.envs.dual_control.folds import make_task
from hindsight.envs.dual_control.session import TelecomSession
from hindsight.envs.dual_control.solver import solve
from hindsight.envs.dual_control.tasks import DEFAULT_SLIP_PROBABILITY

BREAKDOWNS: tuple[str, ...] = ("intent", "outcome", "issues", "persona", "fault")
"""The breakdowns ``task_labels`` names, in report order."""


def task_labels(split: str, seed: int, slip_probability: float = DEFAULT_SLIP_PROBABILITY) -> dict[str, tuple[str, ...]]:
    """Breakdown -> the groups task ``seed`` of fold ``split`` counts in (a task counts under
    each of its fault families)."""
    task = make_task(split, int(seed), slip_probability)
    return {
        "intent": (task.intent,), "outcome": (task.outcome,), "issues": (str(task.issues),),
        "persona": (task.persona,), "fault": tuple(task.faults),
    }


def gold_actions(split: str, seed: int, slip_probability: float = DEFAULT_SLIP_PROBABILITY) -> list[str]:
    """The gold action sequence of task ``seed`` of fold ``split``."""
    return solve(make_task(split, int(seed), slip_probability))


def progress(session: TelecomSession) -> float:
    """The share of the final check's starting findings cleared so far (1.0 once won)."""
    if session.won:
        return 1.0
    return max(0.0, 1.0 - session.remaining() / max(session.initial_problems, 1))

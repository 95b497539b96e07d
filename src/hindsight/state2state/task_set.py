"""Reached states -> a table of goal tasks "reach a state where <facts>".

For every explored task instance (environment, game, parameters, fold, seed) the start
state is the state after ``reset``. Every later reached state whose facts differ from the
start gives a candidate goal: up to ``facts_per_goal`` facts drawn (seeded) from the facts
that hold there and not at the start, so the goal never holds at the start and the
recorded path proves it reachable. Candidates are deduplicated per instance, shuffled with
the seed and cut to ``max_tasks``.

The task table (``TASK_COLUMNS``; the catalog's versioned ``state2state_tasks``):

    task_id      row number, the goal environment's seed
    env, game, params, split, seed   the instance the goal is played on (params: JSON)
    goal         list[str], the goal facts (``facts``)
    task         the goal's task text (``facts.goal_text``)
    path         list[str], accepted actions that first reached a state holding the goal
    path_length  len(path)
    source       random | policy: who reached it
"""

from __future__ import annotations

import random
from typing import Any

import pandas as pd

from hindsight.state2state.facts import goal_text, parse_fact

INSTANCE_COLUMNS = ["env", "game", "params", "split", "seed"]
TASK_COLUMNS = ["task_id", *INSTANCE_COLUMNS, "goal", "task", "path", "path_length", "source"]


class TaskSetError(ValueError):
    """A State2State task table that cannot be trained on (the message names row and field)."""


def build_task_set(states: pd.DataFrame, *, facts_per_goal: int, max_tasks: int, seed: int) -> pd.DataFrame:
    """The goal tasks of an exploration's state table (see the module docstring).

    Args:
        states: ``exploration.explore_states``' table.
        facts_per_goal: Most facts in one goal (fewer where fewer facts changed).
        max_tasks: Most tasks kept.
        seed: Seed of the fact draws and of the shuffle.

    Returns:
        The task table (``TASK_COLUMNS``), possibly empty.
    """
    if facts_per_goal < 1 or max_tasks < 1:
        raise ValueError(f"facts_per_goal and max_tasks must be >= 1, got {facts_per_goal} and {max_tasks}.")
    rng = random.Random(seed)
    candidates: dict[tuple, dict[str, Any]] = {}
    for instance, rows in states.groupby(INSTANCE_COLUMNS, sort=True):
        starts = rows[rows["step"] == 0]
        if starts.empty:
            continue
        start = set(starts.iloc[0]["facts"])
        episodes = {key: episode.sort_values("step") for key, episode in rows.groupby(["source", "episode"])}
        for row in rows[rows["step"] > 0].sort_values(["step", "source", "episode"]).itertuples(index=False):
            changed = sorted(set(row.facts) - start)
            if not changed:
                continue
            goal = tuple(sorted(rng.sample(changed, min(facts_per_goal, len(changed)))))
            key = (*instance, goal)
            if key not in candidates:  # rows come shortest path first: keep the shortest witness
                path = _first_path_holding(episodes[(row.source, row.episode)], set(goal))
                candidates[key] = {
                    **dict(zip(INSTANCE_COLUMNS, instance)), "goal": list(goal), "task": goal_text(goal),
                    "path": path, "path_length": len(path), "source": row.source,
                }
    chosen = list(candidates.values())
    rng.shuffle(chosen)
    table = pd.DataFrame(chosen[:max_tasks], columns=TASK_COLUMNS[1:])
    table = table.sort_values(INSTANCE_COLUMNS + ["path_length", "task"], kind="stable").reset_index(drop=True)
    table.insert(0, "task_id", range(len(table)))
    table["seed"] = table["seed"].astype("int64")
    table["path_length"] = table["path_length"].astype("int64")
    return table


def _first_path_holding(episode: pd.DataFrame, goal: set[str]) -> list[str]:
    """The path to the first state of ``episode`` where every goal fact holds (the goal
    environment ends the episode there, so a longer path would not replay)."""
    for row in episode.itertuples(index=False):
        if goal <= set(row.facts):
            return list(row.path)
    raise AssertionError("the goal was drawn from a state of this episode")


def check_task_set(table: pd.DataFrame, name: str = "state2state_tasks") -> pd.DataFrame:
    """Raise ``TaskSetError`` naming the dataset, row and field of the first bad value.

    Returns:
        ``table`` unchanged.
    """
    missing = [column for column in TASK_COLUMNS if column not in table.columns]
    if missing:
        raise TaskSetError(f"{name}: missing column(s) {missing}; a State2State task table has {TASK_COLUMNS}.")
    if table.empty:
        raise TaskSetError(f"{name}: no tasks (exploration reached no state that differs from its start).")
    for row_number, row in enumerate(table.itertuples(index=False)):
        where = f"{name} row {row_number}"
        if int(row.task_id) != row_number:
            raise TaskSetError(f"{where}, field 'task_id': expected {row_number} (task ids are row numbers), got {row.task_id!r}.")
        goal = list(row.goal) if row.goal is not None else []
        if not goal:
            raise TaskSetError(f"{where}, field 'goal': empty goal.")
        for fact in goal:
            try:
                parse_fact(fact)
            except ValueError as error:
                raise TaskSetError(f"{where}, field 'goal': {error}") from None
        for field in ("env", "game", "split", "params"):
            if not isinstance(getattr(row, field), str) or not getattr(row, field):
                raise TaskSetError(f"{where}, field {field!r}: expected a non-empty string, got {getattr(row, field)!r}.")
    return table

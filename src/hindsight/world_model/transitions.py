"""The world model's text format: (task, history, action) -> next observation.

WM-R1 (docs/fidelity.md, WM-R1) replaces the environment by a causal LM that predicts the
next observation. Its training examples come from the trajectory table (expert episodes and
policy rollouts alike): step t of an episode gives one example

    Task: <task text>
    Observation: <o_{t-H}>          (the last ``history`` earlier steps)
    Action: <a_{t-H}>
    ...
    Observation: <o_t>
    Action: <a_t>
    Next observation:

whose response is ``o_{t+1}`` (the observation of the episode's next row), on one line.
The table does not hold the observation after an episode's last step; the last step of a
won episode gets the response ``SOLVED_MARKER`` instead, and the last step of an episode the
environment ended without a win before the step limit (a wrong click that closes a web
task) gets ``FAILED_MARKER``: its outcome is known, the episode is over and lost. The last
step of an episode cut at the step limit gives no example (what followed it is unknown).
So the same model judges the outcome: a world-model episode is won when the model answers
``SOLVED_MARKER`` and lost when it answers ``FAILED_MARKER`` (a rule on the model's own
output; see ``hindsight.world_model.environment``). Without the failed endings a model
trained on expert episodes sees only won endings, and every action that may end an episode
reads as a win to it.

Held-out examples are whole episodes (a stable hash of the episode id), so that no
held-out transition's history was seen in training.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import pandas as pd

from hindsight.data.outcomes import episode_outcomes
from hindsight.policy.prompts import TASK_PREFIX, one_line

SOLVED_MARKER = "[task solved]"
"""The response that says the action solved the task."""

FAILED_MARKER = "[task failed]"
"""The response that says the action ended the episode without solving the task."""

NEXT_LINE = "Next observation:"
"""The prompt's last line; the response follows it."""

EXAMPLE_COLUMNS = ["episode_id", "group_id", "task_type", "step", "source", "prompt", "response", "terminal", "heldout"]
"""The world-model example table."""


def transition_prompt(task: str, history: Sequence[tuple[str, str]], observation: str, action: str, *, max_chars: int) -> str:
    """The world model's prompt for playing ``action`` on ``observation``.

    Args:
        task: The task text.
        history: Earlier (observation, action) pairs to show, oldest first.
        observation: The current observation.
        action: The action played on it.
        max_chars: Longest observation shown (longer ones are cut, ``prompts.one_line``).

    Returns:
        The prompt text (ends with ``NEXT_LINE``).
    """
    lines = [TASK_PREFIX + one_line(task, max_chars)]
    for seen, played in list(history) + [(observation, action)]:
        lines.append("Observation: " + one_line(seen, max_chars))
        lines.append("Action: " + one_line(played, max_chars))
    lines.append(NEXT_LINE)
    return "\n".join(lines)


def is_solved(response: str) -> bool:
    """Whether a world-model answer says the task was solved."""
    return response.strip().startswith(SOLVED_MARKER)


def is_failed(response: str) -> bool:
    """Whether a world-model answer says the action ended the episode lost."""
    return response.strip().startswith(FAILED_MARKER)


def ended_lost(episode: pd.DataFrame, max_steps: int | None) -> bool:
    """Whether the environment itself ended ``episode`` (its rows, step order) without a win:
    its last row is ``done`` and it is shorter than the step limit (an episode of
    ``max_steps`` rows was cut there; None: the limit is unknown, so no episode counts)."""
    if max_steps is None or "done" not in episode or len(episode) >= max_steps:
        return False
    return bool(episode["done"].iloc[-1]) and not bool(episode["won"].any())


def is_heldout(episode_id: str, fraction: float) -> bool:
    """A stable draw of an episode into the held-out share ``fraction`` (hash of its id)."""
    digest = int(hashlib.sha1(str(episode_id).encode()).hexdigest()[:8], 16)
    return digest / 0xFFFFFFFF < fraction


def transition_examples(
    table: pd.DataFrame, *, history: int, max_chars: int, heldout_fraction: float, max_steps: int | None = None
) -> pd.DataFrame:
    """One world-model example per step whose next observation (or outcome) is known.

    Args:
        table: Trajectory rows (any sources; ``episode_id``, ``step``, ``task``,
            ``observation``, ``action``, ``won``, ``done``, ...).
        history: Earlier steps shown in a prompt.
        max_chars: Longest observation shown.
        heldout_fraction: Share of episodes held out for evaluation.
        max_steps: The environment's step limit: a lost episode that ended before it ends
            with ``FAILED_MARKER`` (``ended_lost``); None: lost episodes end with no example.

    Returns:
        Columns ``EXAMPLE_COLUMNS``.
    """
    if table.empty:
        raise ValueError("world model: no trajectory rows to learn transitions from")
    won = episode_outcomes(table).set_index("episode_id")["success"]
    rows = []
    for episode_id, episode in table.sort_values(["episode_id", "step"]).groupby("episode_id", sort=False):
        observations = episode["observation"].astype(str).tolist()
        actions = episode["action"].astype(str).tolist()
        first = episode.iloc[0]
        heldout = is_heldout(str(episode_id), heldout_fraction)
        for t in range(len(episode)):
            if t + 1 < len(episode):
                response, terminal = one_line(observations[t + 1], max_chars), False
            elif bool(won[episode_id]):
                response, terminal = SOLVED_MARKER, True
            elif ended_lost(episode, max_steps):
                response, terminal = FAILED_MARKER, True
            else:
                continue
            past = list(zip(observations[:t], actions[:t]))[-history:] if history else []
            rows.append({
                "episode_id": str(episode_id),
                "group_id": str(first["group_id"]),
                "task_type": str(first["task_type"]),
                "step": int(episode["step"].iloc[t]),
                "source": str(first["source"]),
                "prompt": transition_prompt(str(first["task"]), past, observations[t], actions[t], max_chars=max_chars),
                "response": response,
                "terminal": terminal,
                "heldout": heldout,
            })
    if not rows:
        raise ValueError("world model: the trajectories hold no transition with a known next observation")
    return pd.DataFrame(rows, columns=EXAMPLE_COLUMNS)

"""Shared builders for the data tests."""

import pytest

from hindsight.data.schema import make_group_id


def build_rows(episode="e1", steps=3, **overrides):
    """Valid trajectory rows of one episode (won on the last step); ``overrides`` apply to all."""
    rows = []
    for step in range(steps):
        last = step == steps - 1
        row = {
            "episode_id": episode,
            "group_id": make_group_id("textworldexpress", "twc", "train", 4),
            "env": "textworldexpress",
            "task_type": "twc",
            "task": "Put things away.",
            "split": "train",
            "seed": 4,
            "step": step,
            "observation": f"obs {step}",
            "anchor_observation": f"obs {step}",
            "valid_actions": ["look around", "take shirt"],
            "action": "look around",
            "response": "look around",
            "reward": 10.0 if last else 0.0,
            "score": 1.0 if last else 0.0,
            "done": last,
            "won": last,
            "action_valid": True,
            "source": "rollout",
            "policy_version": 3,
        }
        row.update(overrides)
        rows.append(row)
    return rows


@pytest.fixture()
def make_rows():
    """The ``build_rows`` builder."""
    return build_rows

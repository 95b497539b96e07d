"""The one trajectory-row builder and ``episode_outcomes``, against known answers."""

import pandas as pd
import pytest

from hindsight.data.outcomes import episode_outcomes
from hindsight.data.rows import EpisodeFields, trajectory_row
from hindsight.data.schema import EPISODE_OUTCOME_COLUMNS, TRAJECTORY_COLUMNS, validate_trajectories

pytestmark = pytest.mark.unit

EPISODE = EpisodeFields(
    episode_id="e1", group_id="textworldexpress/twc/train/4", env="textworldexpress", task_type="twc",
    task="Put things away.", split="train", seed=4, source="rollout", policy_version=3,
)


def step_row(step: int, *, reward: float, won: bool = False, valid: bool = True, episode=EPISODE) -> dict:
    return trajectory_row(
        episode, step=step, observation=f"obs {step}", anchor_observation=f"obs {step}",
        valid_actions=("look around", "take shirt"), action="take shirt", response="take shirt",
        reward=reward, score=float(won), done=won, won=won, action_valid=valid,
    )


def test_trajectory_row_has_every_column_in_order_with_canonical_types():
    row = step_row(0, reward=-0.1, valid=False)
    assert list(row) == list(TRAJECTORY_COLUMNS)
    assert row == {
        "episode_id": "e1", "group_id": "textworldexpress/twc/train/4", "env": "textworldexpress",
        "task_type": "twc", "task": "Put things away.", "split": "train", "seed": 4, "step": 0,
        "observation": "obs 0", "anchor_observation": "obs 0", "valid_actions": ["look around", "take shirt"],
        "action": "take shirt", "response": "take shirt", "reward": -0.1, "score": 0.0, "done": False,
        "won": False, "action_valid": False, "source": "rollout", "policy_version": 3,
    }
    assert isinstance(row["valid_actions"], list) and isinstance(row["reward"], float)


def test_rows_of_the_builder_pass_the_schema_check():
    rows = [step_row(0, reward=0.0), step_row(1, reward=10.0, won=True)]
    table = validate_trajectories(pd.DataFrame(rows), "builder")
    assert table.to_dict("records") == rows


def test_episode_outcomes_known_answer():
    other = EpisodeFields(**{**EPISODE.__dict__, "episode_id": "e2"})
    rows = [
        step_row(0, reward=-0.1, valid=False), step_row(1, reward=0.0), step_row(2, reward=10.0, won=True),
        step_row(0, reward=0.0, episode=other), step_row(1, reward=-0.1, valid=False, episode=other),
    ]
    table = pd.DataFrame(rows)
    outcomes = episode_outcomes(table)
    assert list(outcomes.columns) == ["episode_id", *EPISODE_OUTCOME_COLUMNS]
    assert outcomes.to_dict("records") == [
        {"episode_id": "e1", "success": True, "length": 3, "return": 9.9, "invalid_actions": 1},
        {"episode_id": "e2", "success": False, "length": 2, "return": -0.1, "invalid_actions": 1},
    ]
    assert [str(outcomes[name].dtype) for name in EPISODE_OUTCOME_COLUMNS] == ["bool", "int64", "float64", "int64"]


def test_episode_outcomes_keeps_same_ids_of_different_keys_apart():
    rows = [step_row(0, reward=10.0, won=True), step_row(0, reward=0.0)]
    table = pd.DataFrame(rows).assign(agent=["policy", "random"])
    outcomes = episode_outcomes(table, ["agent"])
    assert outcomes[["agent", "episode_id", "success", "length"]].to_dict("records") == [
        {"agent": "policy", "episode_id": "e1", "success": True, "length": 1},
        {"agent": "random", "episode_id": "e1", "success": False, "length": 1},
    ]


def test_episode_outcomes_of_no_steps_is_an_empty_typed_table():
    outcomes = episode_outcomes(pd.DataFrame(columns=list(TRAJECTORY_COLUMNS)), ["task_type"])
    assert list(outcomes.columns) == ["task_type", "episode_id", *EPISODE_OUTCOME_COLUMNS] and outcomes.empty
    assert outcomes["success"].dtype == bool and outcomes["length"].dtype == "int64"

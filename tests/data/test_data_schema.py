"""The trajectory schema check: coercion, and one clear error per kind of problem."""

import numpy as np
import pandas as pd
import pytest

from hindsight.data.schema import (
    EPISODE_SUMMARY_COLUMNS,
    TRAJECTORY_COLUMNS,
    TrajectoryValidationError,
    empty_episode_summary,
    empty_trajectory_table,
    make_group_id,
    validate_episode_summary,
    validate_trajectories,
)

pytestmark = pytest.mark.unit


def test_group_id_format():
    assert make_group_id("textworldexpress", "twc", "train", 17) == "textworldexpress/twc/train/17"


def test_empty_tables_have_every_column_and_dtype():
    table = empty_trajectory_table()
    assert list(table.columns) == list(TRAJECTORY_COLUMNS) and len(table) == 0
    assert table["step"].dtype == np.int64 and table["reward"].dtype == np.float64 and table["done"].dtype == bool
    assert list(empty_episode_summary().columns) == list(EPISODE_SUMMARY_COLUMNS)
    assert validate_trajectories(table, "empty").empty


def test_valid_table_is_returned_canonical(make_rows):
    frame = pd.DataFrame(make_rows() + make_rows("e2", 2))
    frame = frame[list(reversed(frame.columns))].assign(extra_column=1)
    frame["valid_actions"] = [np.array(actions) for actions in frame["valid_actions"]]
    frame["seed"] = frame["seed"].astype(float)  # integral floats pass as ints
    table = validate_trajectories(frame, "memory")
    assert list(table.columns) == list(TRAJECTORY_COLUMNS)
    assert table["seed"].dtype == np.int64 and table["seed"].tolist() == [4] * 5
    assert table["valid_actions"][0] == ["look around", "take shirt"]
    assert table.dtypes.equals(empty_trajectory_table().dtypes)


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda rows: rows[1].update(step="1"), r"memory, row 1, field 'step': expected an integer, got str '1'"),
        (lambda rows: rows[2].update(reward=float("nan")), r"memory, row 2, field 'reward': NaN or missing value"),
        (lambda rows: rows[0].update(won="no"), r"memory, row 0, field 'won': expected true/false"),
        (lambda rows: rows[0].update(action=None), r"memory, row 0, field 'action': missing value"),
        (lambda rows: rows[1].update(valid_actions=["a", 3]), r"row 1, field 'valid_actions': expected a list of strings"),
        (lambda rows: rows[1].update(source="teacher"), r"row 1, field 'source': 'teacher' must be one of"),
        (lambda rows: rows[0].update(policy_version=-2), r"row 0, field 'policy_version': -2 must be >= -1"),
        (lambda rows: rows[2].update(step=1), r"row 2, field 'step': episode 'e1' has step 1 twice"),
        (lambda rows: rows[2].update(task_type="boil"), r"row 2, field 'task_type': episode 'e1' has 'boil' here but 'twc' at row 0"),
        (lambda rows: rows[1].update(reward=True), r"row 1, field 'reward': expected a number, got bool True"),
        (lambda rows: rows[0].update(episode_id=" "), r"row 0, field 'episode_id': ' ' must not be empty"),
        (lambda rows: rows[0].update(done=True), r"row 0, field 'done': episode 'e1' ended at step 0 but goes on to step 2"),
    ],
)
def test_each_problem_has_its_own_message(change, expected, make_rows):
    rows = make_rows()
    change(rows)
    with pytest.raises(TrajectoryValidationError, match=expected):
        validate_trajectories(pd.DataFrame(rows), "memory")


def test_missing_column_and_row_labels(make_rows):
    frame = pd.DataFrame(make_rows()).drop(columns=["score", "done"])
    with pytest.raises(TrajectoryValidationError, match=r"runs.parquet: missing field\(s\) 'score', 'done'"):
        validate_trajectories(frame, "runs.parquet")
    rows = make_rows()
    rows[2]["step"] = 7
    labels = ["line 4", "line 5", "line 6"]
    with pytest.raises(TrajectoryValidationError, match=r"f.jsonl, line 4, field 'step': episode 'e1' skips step\(s\) \[2, 3, 4, 5, 6\]"):
        validate_trajectories(pd.DataFrame(rows), "f.jsonl", row_labels=labels)


def test_not_a_dataframe():
    with pytest.raises(TrajectoryValidationError, match="expected a table"):
        validate_trajectories([{"episode_id": "e"}], "list")


def test_episode_summary_check():
    summary = pd.DataFrame(
        {"episode_id": ["a", "a"], "group_id": ["g", "g"], "env": ["x", "x"], "task_type": ["t", "t"],
         "split": ["train", "train"], "source": ["expert", "expert"], "length": [2, 3], "return": [1.0, 0.0],
         "success": [True, False], "invalid_actions": [0, 1]}
    )
    with pytest.raises(TrajectoryValidationError, match="row 1, field 'episode_id': 'a' appears twice"):
        validate_episode_summary(summary, "summary")
    assert len(validate_episode_summary(summary.iloc[:1], "summary")) == 1

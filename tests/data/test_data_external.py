"""Loading external trajectory files: the malformed corpus, conversation sets, round trips."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from hindsight.data import TrajectoryValidationError, load_external_trajectories, validate_trajectories
from hindsight.data.external import MAX_LINE_BYTES
from hindsight.envs.reward import RewardConfig

pytestmark = pytest.mark.unit

HERE = Path(__file__).parent
MALFORMED = HERE / "malformed"
EXAMPLES = HERE / "examples"

# file -> the pieces its message must contain (besides the file name itself)
EXPECTED_ERRORS = {
    "bad_json_line.jsonl": ["line 3", "invalid JSON"],
    "missing_field.jsonl": ["line 2", "missing field(s) 'action'"],
    "wrong_type_step.jsonl": ["line 2", "field 'step'", "expected an integer, got str 'one'"],
    "wrong_type_done.jsonl": ["line 3", "field 'done'", "expected true/false, got str 'true'"],
    "valid_actions_not_list.jsonl": ["line 1", "field 'valid_actions'", "expected a list of strings"],
    "bad_split.jsonl": ["line 1", "field 'split'", "'validation' must be one of"],
    "inconsistent_episode.jsonl": ["line 3", "field 'split'", "'test' here but 'train' at line 1"],
    "step_gap.jsonl": ["line 1", "field 'step'", "skips step(s) [1]"],
    "empty.jsonl": ["the file is empty"],
    "non_utf8.jsonl": ["line 2", "not valid UTF-8", "0xff"],
    "trajectories.csv": ["unknown format", "'.csv'"],
    "top_level_object.json": ["expected a JSON list", "got dict"],
    "truncated_array.json": ["line 37", "invalid JSON"],
    "no_action_line.json": ["item 0", "field 'conversations'", "no assistant turn has an 'Action: ...' line"],
    "missing_action_later_turn.jsonl": ["line 1", "turn 3", "field 'value'", "without an 'Action: ...' line"],
    "unknown_role.jsonl": ["line 1", "turn 2", "field 'role'", "unknown role 'robot'"],
    "turn_missing_value.json": ["item 0", "turn 1", "missing field 'value' (or 'content')"],
    "success_not_bool.json": ["item 0", "field 'success'", "expected true/false, got str 'yes'"],
    "not_parquet.parquet": ["not a parquet file"],
    "corrupt.parquet": ["unreadable parquet file"],
    "missing_column.parquet": ["missing field(s) 'action'"],
    "wrong_type_reward.parquet": ["row 0", "field 'reward'", "expected a number, got str '0'"],
    "duplicate_episode_rows.jsonl": ["line 3", "field 'step'", "episode 'e1' has step 0 twice"],
    "duplicate_episode_id.json": ["item 1", "field 'id'", "'alfworld_7' already used at item 0"],
    "nan_reward.jsonl": ["line 2", "field 'reward'", "NaN or missing value (expected float)"],
    "infinite_score.jsonl": ["line 2", "field 'score'", "expected a finite number, got float inf"],
    "infinite_outcome_reward.json": ["item 0", "field 'reward'", "expected a finite number, got inf"],
    "nan_reward_column.parquet": ["row 1", "field 'reward'", "NaN or missing value (expected float)"],
    "wrong_schema.parquet": ["row 0", "field 'done'", "expected true/false, got int"],
    "mixed_formats.jsonl": ["line 2", "a trajectory row in a file of conversations (like line 1)"],
    "mixed_formats_row_first.jsonl": ["line 2", "a conversation in a file of trajectory rows (like line 1)"],
    "huge_line.jsonl": ["line 2", "over the limit of 8,388,608 bytes per JSON line"],
    "no_assistant_turn.jsonl": ["line 1", "field 'conversations'", "no assistant turn among its 3 turn(s)"],
    "empty_conversation.json": ["item 0", "field 'conversations'", "no assistant turn among its 0 turn(s)"],
    "conversations_not_list.json": ["item 0", "field 'conversations'", "expected a list of turns, got str"],
    "bom_inside.jsonl": ["line 3", "byte-order mark (U+FEFF)"],
    "array_of_numbers.json": ["item 0", "neither a trajectory row", "got int 1"],
    "blank_lines_only.jsonl": ["only blank lines", "no records"],
    "negative_step.jsonl": ["line 1", "field 'step'", "-1 must be >= 0"],
    "step_after_done.jsonl": ["line 2", "field 'done'", "ended at step 1 but goes on to step 2"],
    "null_action.jsonl": ["line 2", "field 'action'", "missing value (expected str)"],
}

FILE_LEVEL = {
    "empty.jsonl", "blank_lines_only.jsonl", "trajectories.csv", "top_level_object.json",
    "not_parquet.parquet", "corrupt.parquet", "missing_column.parquet",
}
"""Problems of the whole file: the message says what is wrong, no line or row."""

NO_FIELD = {
    "bad_json_line.jsonl", "truncated_array.json", "non_utf8.jsonl", "huge_line.jsonl", "bom_inside.jsonl",
    "mixed_formats.jsonl", "mixed_formats_row_first.jsonl", "array_of_numbers.json",
    "missing_field.jsonl", "turn_missing_value.json",
}
"""Problems of a whole line or record (unreadable, of the wrong kind, or a field absent:
that field is named without the word "field 'x'")."""


def test_every_malformed_file_has_an_expectation():
    files = {path.name for path in MALFORMED.iterdir() if path.is_file() and path.name != "README.md"}  # gui/: GUI files
    assert files == set(EXPECTED_ERRORS)
    assert len(files) >= 32
    assert FILE_LEVEL <= files and NO_FIELD <= files


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_malformed_file_fails_with_its_own_message(name):
    with pytest.raises(TrajectoryValidationError) as error:
        load_external_trajectories(MALFORMED / name)
    message = str(error.value)
    assert name in message
    for piece in EXPECTED_ERRORS[name]:
        assert piece in message, f"{piece!r} not in {message!r}"
    if name not in FILE_LEVEL:
        assert re.search(r", (line|item|row) \d+", message), message
    if name not in FILE_LEVEL | NO_FIELD:
        assert re.search(r", field '\w+'", message), message


def test_malformed_messages_are_distinct():
    messages = set()
    for name in EXPECTED_ERRORS:
        with pytest.raises(TrajectoryValidationError) as error:
            load_external_trajectories(MALFORMED / name)
        messages.add(str(error.value).replace(name, "FILE"))
    assert len(messages) == len(EXPECTED_ERRORS)


def test_the_huge_line_is_just_over_the_cap():
    lines = (MALFORMED / "huge_line.jsonl").read_bytes().splitlines()
    assert len(lines[0]) < MAX_LINE_BYTES < len(lines[1]) < MAX_LINE_BYTES + 1024 * 1024


def test_a_byte_order_mark_at_the_start_is_accepted(tmp_path, make_rows):
    rows = make_rows("a", 2)
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (tmp_path / "plain.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    pd.testing.assert_frame_equal(
        load_external_trajectories(tmp_path / "bom.jsonl"), load_external_trajectories(tmp_path / "plain.jsonl")
    )


def test_steps_in_any_row_order_are_accepted(tmp_path, make_rows):
    """Row order is not step order (downstream sorts by step); a gap or a repeat is an error."""
    rows = make_rows("a", 3)
    (tmp_path / "shuffled.jsonl").write_text("".join(json.dumps(row) + "\n" for row in [rows[2], rows[0], rows[1]]))
    table = load_external_trajectories(tmp_path / "shuffled.jsonl")
    assert table["step"].tolist() == [2, 0, 1] and table["done"].tolist() == [True, False, False]


def test_missing_file():
    with pytest.raises(TrajectoryValidationError, match="nowhere.jsonl: no such file"):
        load_external_trajectories(HERE / "nowhere.jsonl")


def test_sharegpt_conversations_with_preamble():
    table = load_external_trajectories(EXAMPLES / "sharegpt_alfworld.json")
    first = table[table["episode_id"] == "external/sharegpt_alfworld/alfworld_0"]
    assert first["action"].tolist() == ["go to fridge 1", "open fridge 1", "take egg 1 from fridge 1"]
    assert first["step"].tolist() == [0, 1, 2]
    assert set(first["task"]) == {"Your task is to: put a cool egg in cabinet 1."}
    assert first["observation"].iloc[0].startswith("You are in the middle of a room")
    assert first["observation"].iloc[1] == "The fridge 1 is closed."
    assert first["response"].iloc[0].startswith("Thought: The egg is probably in the fridge.")
    assert first["won"].tolist() == [False, False, True] and first["done"].tolist() == [False, False, True]
    assert first["reward"].tolist() == [0.0, 0.0, 10.0]
    assert set(table["task_type"]) == {"alfworld"} and set(table["env"]) == {"external"}
    assert set(table["source"]) == {"expert"} and set(table["policy_version"]) == {-1}
    second = table[table["episode_id"] == "external/sharegpt_alfworld/alfworld_1"]
    assert not second["won"].any() and second["done"].tolist() == [True]


def test_messages_jsonl_with_reward_outcome():
    table = load_external_trajectories(EXAMPLES / "messages.jsonl", reward=RewardConfig(success_reward=1.0))
    boil = table[table["task_type"] == "boil"]
    assert boil["split"].tolist() == ["dev", "dev"] and boil["won"].tolist() == [False, True]
    assert boil["reward"].tolist() == [0.0, 1.0]
    assert boil["task"].iloc[0] == "Your task is to boil water."
    animal = table[table["task_type"] == "find-animal"]
    assert not animal["won"].any()  # reward 0.25 < 1.0 is not a success
    assert set(animal["split"]) == {"train"}


def test_assume_success_for_episodes_without_outcome(tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps([[{"from": "human", "value": "Find it."}, {"from": "gpt", "value": "Action: look"}]]))
    assert not load_external_trajectories(path)["won"].any()
    assert load_external_trajectories(path, assume_success=True)["won"].tolist() == [True]


def test_own_schema_round_trips_in_every_format(tmp_path, make_rows):
    table = validate_trajectories(pd.DataFrame(make_rows("a", 3) + make_rows("b", 2)), "memory")
    records = table.to_dict("records")
    table.to_parquet(tmp_path / "t.parquet")
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(record) for record in records) + "\n")
    (tmp_path / "t.json").write_text(json.dumps({"rows": records}))
    (tmp_path / "lines.json").write_text("\n".join(json.dumps(record) for record in records))  # JSON lines named .json
    (tmp_path / "array.jsonl").write_text(json.dumps(records, indent=2))  # one JSON list named .jsonl
    before = sorted(path.name for path in tmp_path.iterdir())
    for name in before:
        loaded = load_external_trajectories(tmp_path / name)
        pd.testing.assert_frame_equal(loaded, table, obj=name)
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # nothing written


def test_parquet_with_a_conversations_column(tmp_path):
    frame = pd.DataFrame(
        {
            "id": ["webshop_3"],
            "conversations": [
                [
                    {"from": "human", "value": "Your task is to buy socks."},
                    {"from": "gpt", "value": "Action: search[socks]"},
                ]
            ],
            "reward": [1.0],
        }
    )
    frame.to_parquet(tmp_path / "sft.parquet")
    table = load_external_trajectories(tmp_path / "sft.parquet")
    assert table["action"].tolist() == ["search[socks]"] and table["won"].tolist() == [True]
    assert table["task_type"].tolist() == ["webshop"]


def test_source_of_conversation_episodes_is_a_parameter():
    table = load_external_trajectories(EXAMPLES / "messages.jsonl", source="rollout")
    assert set(table["source"]) == {"rollout"}
    with pytest.raises(ValueError, match="source must be one of"):
        load_external_trajectories(EXAMPLES / "messages.jsonl", source="teacher")


def test_the_episodes_whose_outcome_was_assumed_are_counted(tmp_path):
    from hindsight.data.conversations import OUTCOME_ASSUMED

    path = tmp_path / "mixed.json"
    stated = [{"from": "human", "value": "Find it."}, {"from": "gpt", "value": "Action: look"}]
    path.write_text(json.dumps([
        {"conversations": stated, "success": False},
        {"conversations": stated},
        {"conversations": stated},
    ]))
    table = load_external_trajectories(path, assume_success=True)
    assert table.attrs[OUTCOME_ASSUMED] == 2
    assert table.groupby("episode_id", sort=False)["won"].any().tolist() == [False, True, True]


def test_task_is_the_users_instruction_not_the_preamble(tmp_path):
    preamble = "Interact with a household to solve a task. Reply with 'Action: ...'."
    acknowledged = [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": preamble},
        {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "Put a clean mug on the shelf."},
        {"role": "assistant", "content": "Action: go to sink 1"},
    ]
    unacknowledged = [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": preamble},
        {"role": "user", "content": "Find the  red book."},
        {"role": "assistant", "content": "Action: look"},
    ]
    path = tmp_path / "instructions.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"house_{i}", "messages": m}) for i, m in enumerate([acknowledged, unacknowledged])))
    table = load_external_trajectories(path, assume_success=True)
    assert table.groupby("episode_id")["task"].first().tolist() == ["Put a clean mug on the shelf.", "Find the red book."]

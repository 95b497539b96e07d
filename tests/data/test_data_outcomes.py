"""Episode summaries and ingestion counts derived from the step table."""

import pandas as pd
import pytest

from hindsight.data.outcomes import ingestion_counts, metric_key, summarize_episodes
from hindsight.data.schema import EPISODE_SUMMARY_COLUMNS, empty_trajectory_table, validate_trajectories

pytestmark = pytest.mark.unit


@pytest.fixture()
def table(make_rows):
    won = make_rows("won", 3, task_type="twc")
    lost = make_rows("lost", 2, task_type="twc", won=False, reward=0.0)
    lost[0].update(action_valid=False, reward=-0.1)
    cooking = make_rows("cook", 4, task_type="cookingworld", group_id="textworldexpress/cookingworld/dev/1", split="dev")
    return validate_trajectories(pd.DataFrame(won + lost + cooking), "memory")


def test_summarize_episodes(table):
    summary = summarize_episodes(table).set_index("episode_id")
    assert list(summarize_episodes(table).columns) == list(EPISODE_SUMMARY_COLUMNS)
    assert summary.loc["won", "length"] == 3 and summary.loc["won", "return"] == 10.0 and summary.loc["won", "success"]
    assert summary.loc["lost", "success"] == False  # noqa: E712  (numpy bool)
    assert summary.loc["lost", "invalid_actions"] == 1 and summary.loc["lost", "return"] == pytest.approx(-0.1)
    assert summary.loc["cook", "split"] == "dev" and summary.loc["cook", "length"] == 4


def test_ingestion_counts(table):
    counts = ingestion_counts(table)
    assert counts["ingestion/episodes"] == 3.0 and counts["ingestion/steps"] == 9.0
    assert counts["ingestion/success_rate"] == pytest.approx(2 / 3)
    assert counts["ingestion/invalid_action_rate"] == pytest.approx(1 / 9)
    assert counts["ingestion/episodes/twc"] == 2.0 and counts["ingestion/success_rate/twc"] == 0.5
    assert counts["ingestion/success_rate/cookingworld"] == 1.0
    assert all(isinstance(value, float) for value in counts.values())


def test_empty_table_counts_and_metric_keys():
    assert summarize_episodes(empty_trajectory_table()).empty
    assert ingestion_counts(empty_trajectory_table())["ingestion/success_rate"] == 0.0
    assert metric_key("success_rate", "pick&place (v2)") == "ingestion/success_rate/pick_place _v2_"

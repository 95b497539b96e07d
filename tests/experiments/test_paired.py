"""Methods paired against GRPO (``experiments.paired``): each cell read at its decoding picked
on seen tasks, pairs over the same unseen tasks and seeds, pooled, with a bootstrap interval."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.experiments.paired import OUTCOME_COLUMNS, evaluation_outcomes, paired_against, paired_against_markdown


def cell(method: str, seed: int, wins: dict[tuple[str, str], list[int]]) -> list[dict]:
    """A cell's outcomes: per (split, decoding) the won flags of tasks 0, 1, ..."""
    rows = []
    for (split, decoding), flags in wins.items():
        for task, won in enumerate(flags):
            rows.append({"cell": f"{method}-s{seed}", "method": method, "seed": seed, "fraction": 1.0, "agent": f"policy-{decoding}",
                         "eval_split": split, "env": "twx", "task_type": "twc", "task_seed": task, "trial": 0, "won": won})
    return rows


def outcomes() -> pd.DataFrame:
    """GRPO wins unseen tasks 0-3 of 10 at its seen-picked decoding (greedy); SEED's seen pick
    is sampled, where it wins unseen 0-6; SEED's greedy wins every unseen task, but seen tasks
    did not pick it, so the pairs must not see it."""
    rows = []
    for seed in (0, 1):
        rows += cell("grpo", seed, {("seen", "greedy"): [1, 1, 0, 0], ("seen", "sampled"): [1, 0, 0, 0],
                                    ("unseen", "greedy"): [1] * 4 + [0] * 6, ("unseen", "sampled"): [1] * 10})
        rows += cell("seed", seed, {("seen", "greedy"): [0, 0, 0, 0], ("seen", "sampled"): [1, 1, 1, 0],
                                    ("unseen", "greedy"): [1] * 10, ("unseen", "sampled"): [1] * 7 + [0] * 3})
    rows += cell("gigpo", 5, {("seen", "greedy"): [1], ("unseen", "greedy"): [1]})  # no GRPO cell at seed 5: unpaired
    return pd.DataFrame(rows, columns=OUTCOME_COLUMNS)


def test_pairs_use_each_cells_seen_pick_and_pool_seeds():
    table = paired_against(outcomes(), baseline="grpo").set_index("method")
    assert list(table.index) == ["seed"]  # gigpo shares no seed with grpo
    row = table.loc["seed"]
    assert (row.seeds, row.pairs) == (2, 20)
    assert row["mean"] == pytest.approx(0.3)  # 7/10 against 4/10 on each seed
    assert (row.method_success, row.baseline_success) == (pytest.approx(0.7), pytest.approx(0.4))
    assert (row.method_only, row.baseline_only) == (6, 0)
    assert 0 < row.low <= 0.3 <= row.high
    assert row.decodings == "0: sampled / greedy; 1: sampled / greedy"


def test_the_report_section_says_whether_a_method_separates():
    text = paired_against_markdown(outcomes())
    assert text.startswith("## Paired against grpo")
    assert "| seed | 2 | 20 | 70.0 | 40.0 | +30.0 (" in text and "| above |" in text
    assert paired_against_markdown(outcomes()[lambda t: t["method"] != "grpo"]) == ""
    assert paired_against_markdown(pd.DataFrame(columns=OUTCOME_COLUMNS)) == ""


def evaluation(wins: dict[str, list[int]], agents=("stage1-greedy", "rl-greedy", "rl-t0.4")) -> pd.DataFrame:
    """An evaluation run's episodes (two steps each, won on the last): per split the won flags
    of tasks 0, 1, ..., the same for every agent."""
    rows = [
        {"episode_id": f"{agent}:{split}:{task}", "agent": agent, "eval_split": split, "env": "twx", "task_type": "twc",
         "seed": task, "trial": 0, "step": step, "won": bool(won) and step == 1, "done": step == 1, "action_valid": True, "reward": float(bool(won) and step == 1)}
        for agent in agents for split, flags in wins.items() for task, won in enumerate(flags) for step in (0, 1)
    ]
    return pd.DataFrame(rows)


def test_an_evaluation_run_outside_the_grid_is_one_cell():
    """A standalone run's RL agents become the cell ``<method>-<seed>`` with the grid's
    columns, its start the same under ``policy="stage1"``; both pair as the grid's cells do."""
    episodes = evaluation({"seen": [1, 0], "unseen": [1, 1, 0, 0]})
    cell = evaluation_outcomes(episodes, "seed", 7)
    assert list(cell.columns) == OUTCOME_COLUMNS
    assert set(cell["cell"]) == {"seed-7"} and set(cell["seed"]) == {7} and set(cell["fraction"]) == {1.0}
    assert set(cell["agent"]) == {"policy-greedy", "policy-t0.4"}
    assert sorted(cell.loc[(cell["eval_split"] == "unseen") & (cell["agent"] == "policy-greedy"), "won"]) == [0, 0, 1, 1]
    start = evaluation_outcomes(episodes, "start", 7, policy="stage1")
    assert set(start["agent"]) == {"policy-greedy"} and len(start) == 6
    better = evaluation_outcomes(evaluation({"seen": [1, 1], "unseen": [1, 1, 1, 0]}), "seed", 7)
    row = paired_against(pd.concat([better, cell.assign(method="grpo", cell="grpo-7")]), "grpo").iloc[0]
    assert (row.method, row.pairs, row.method_only, row.baseline_only) == ("seed", 4, 1, 0)
    with pytest.raises(ValueError, match="no episodes of agents gigpo-<decoding>"):
        evaluation_outcomes(episodes, "gigpo", 7, policy="gigpo")

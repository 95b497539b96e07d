"""Episodes to level (``experiments.sample_efficiency``): per cell the training episodes until
the first held-out point at or above a level fixed in the settings, at the split and decoding
it names; "not reached" where no point reaches it, never a figure between or past the points;
over seeds the count, the median (a seed not reaching counts above every figure) and the mean
only when every seed reached it. The level's split and decoding must be ones the preset plays."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hindsight.config.files import grid_settings
from hindsight.experiments.sample_efficiency import episodes_to_level, episodes_to_level_markdown, over_seeds
from hindsight.params import ParameterError

CURVES = {  # method, seed -> seen-split success at updates 0, 10, 20 (10 episodes per update)
    ("grpo", 0): [0.30, 0.42, 0.45],
    ("grpo", 1): [0.30, 0.35, 0.41],
    ("grpo", 2): [0.30, 0.33, 0.39],
    ("seed", 0): [0.30, 0.40, 0.38],
}


def _histories() -> pd.DataFrame:
    rows = []
    for (method, seed), rates in CURVES.items():
        for update in range(21):
            row = {"cell": f"{method}-f100-s{seed}", "method": method, "seed": seed, "fraction": 1.0, "update": update,
                   "rollout/env_episodes": 10.0 if update else float("nan")}
            if update % 10 == 0:
                row["heldout/seen/sampled/success_rate"] = rates[update // 10]
                row["heldout/unseen/sampled/success_rate"] = 0.9  # never read: the level is on seen tasks
            rows.append(row)
    return pd.DataFrame(rows)


def test_each_cell_reaches_the_level_at_its_first_point_above_it():
    table = episodes_to_level(_histories(), 0.4, "seen", "sampled").set_index("cell")
    assert table.loc["grpo-f100-s0", "env_episodes"] == 100 and table.loc["grpo-f100-s0", "update"] == 10
    assert table.loc["grpo-f100-s1", "env_episodes"] == 200
    assert not table.loc["grpo-f100-s2", "reached"] and math.isnan(table.loc["grpo-f100-s2", "env_episodes"])
    assert table.loc["seed-f100-s0", "env_episodes"] == 100  # exactly at the level counts; the later drop does not undo it
    assert episodes_to_level(_histories(), 0.4, "seen", "greedy").empty  # no curve at that decoding


def test_over_seeds_the_median_counts_a_seed_not_reaching_above_every_figure():
    assert over_seeds([100.0, 200.0, math.nan]) == (2, 200.0, pytest.approx(math.nan, nan_ok=True))
    count, median, mean = over_seeds([100.0, math.nan, math.nan])
    assert count == 1 and math.isnan(median) and math.isnan(mean)
    assert over_seeds([100.0, 300.0]) == (2, 200.0, 200.0)


def test_the_report_table_says_not_reached_and_never_extrapolates():
    text = episodes_to_level_markdown(_histories(), 0.4, "seen", "sampled")
    assert "## Episodes to level (40% held-out success, seen split, sampled decoding)" in text
    assert "| GRPO | 100 (10) | 200 (20) | not reached | 2/3 | 200 | - |" in text
    assert "| SEED | 100 (10) | - | - | 1/1 | 100 | 100 |" in text
    assert episodes_to_level_markdown(_histories(), 0.5, "seen", "sampled").count("not reached") >= 4


def test_the_level_must_be_read_where_the_preset_plays():
    assert grid_settings(None, {}).experiments.success_level.split == "seen"
    with pytest.raises(ParameterError, match="success_level reads the 'unseen_types' split"):
        grid_settings(None, {"success_level": {"split": "unseen_types"}})
    with pytest.raises(ParameterError, match="success_level.rate"):
        grid_settings(None, {"success_level": {"rate": 1.5}})

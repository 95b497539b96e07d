"""A grid cell's committed summary (``experiments.summaries``): what it keeps (the curve, the
end outcomes, the settings hash, the commit and the machine), that it is small, that it is
written whole, and that a corrupted one stops the grid naming the file and the field."""

from __future__ import annotations

import json

import pytest
from grid_fakes import CELLS, Counting, Identity

from hindsight.experiments.resume import run_resumable_grid
from hindsight.experiments.summaries import SummaryError, read_summary


@pytest.fixture
def summaries(tmp_path):
    run_resumable_grid(CELLS, Counting(), Identity(), cache_dir=tmp_path / "cache", summaries_dir=tmp_path / "quick")
    return tmp_path / "quick"


def test_a_summary_keeps_the_curve_the_outcomes_and_where_it_came_from(summaries):
    path = summaries / "seed-f100-s1.json"
    summary = read_summary(path)
    assert summary["history"]["heldout/seen/sampled/success_rate"] == {"0": 0.5, "2": 0.75}
    assert summary["history"]["rollout/success_rate"] == {"1": 0.333333, "2": 0.333333}  # 6 significant digits
    assert "losses/grad_norm" not in summary["history"]  # absent values are left out
    assert summary["end_outcomes"] == [{"agent": "policy-sampled", "eval_split": "unseen", "env": "twc", "task_type": "twc",
                                        "trial": 0, "seeds": [11, 12, 13, 14], "won": "1010"}]
    assert len(summary["settings_hash"]) == 16 and summary["settings"] == {"rl.learning_rate": 1e-4, "start_from": "base"}
    assert summary["cpu"] == "a test CPU" and summary["git_commit"]
    assert path.stat().st_size < 4000
    assert [p.name for p in summaries.iterdir() if p.name.startswith(".")] == []  # no staging file left


def _corrupt(path, change):
    summary = json.loads(path.read_text())
    change(summary)
    path.write_text(json.dumps(summary))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s.pop("settings_hash"), "'settings_hash' is missing"),
        (lambda s: s.update(seed="one"), "'seed' must be int"),
        (lambda s: s.update(cell="grpo-f100-s9"), "'cell' is 'grpo-f100-s9'"),
        (lambda s: s["history"]["heldout/seen/sampled/success_rate"].update({"x": 1}), "'history.heldout/seen/sampled/success_rate'"),
        (lambda s: s["end_outcomes"][0].update(won="10"), "'end_outcomes[0].won'"),
        (lambda s: s["final"].update({"eval/seen/all/success_rate": "high"}), "'final.eval/seen/all/success_rate'"),
    ],
)
def test_a_corrupted_summary_names_the_file_and_the_field(summaries, tmp_path, change, field):
    path = summaries / "seed-f100-s1.json"
    _corrupt(path, change)
    with pytest.raises(SummaryError) as error:
        run_resumable_grid(CELLS, Counting(), Identity(), cache_dir=tmp_path / "cache", summaries_dir=summaries)
    assert str(path) in str(error.value) and field in str(error.value)


def test_a_truncated_summary_is_named_too(summaries):
    path = summaries / "grpo-f100-s0.json"
    path.write_text(path.read_text()[:50])
    with pytest.raises(SummaryError, match="grpo-f100-s0.json: field '\\(JSON\\)' is not valid JSON"):
        read_summary(path)


def test_a_write_that_fails_leaves_the_previous_summary_whole(summaries, monkeypatch):
    import os

    from hindsight.atomic import DirectoryWriteError
    from hindsight.experiments.summaries import write_summary

    path = summaries / "grpo-f100-s0.json"
    before = path.read_text()

    def disk_full(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(DirectoryWriteError, match="grpo-f100-s0.json"):
        write_summary(summaries, {**read_summary(path), "seconds": 1.0})
    assert path.read_text() == before and not [p for p in summaries.iterdir() if p.name.startswith(".")]

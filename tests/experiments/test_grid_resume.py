"""The grid resumes from its committed summaries (``experiments.resume``), on a tiny grid of
made-up cells: a second run reruns no cell, a changed setting reruns only that cell (and the
log names the setting), a summary written from other starting weights is kept with a warning,
a fresh machine (no cache) with the summaries reruns nothing, and the records, from the
summaries alone, are the same whether the cells ran now or earlier."""

from __future__ import annotations

import json
import logging
import shutil

from grid_fakes import CELLS, Counting, Identity

from hindsight.experiments.resume import run_resumable_grid
from hindsight.pipelines.experiments.nodes import grid_tables


def _run(tmp_path, identity, counter, cache="cache"):
    return run_resumable_grid(CELLS, counter, identity, cache_dir=tmp_path / cache, summaries_dir=tmp_path / "results" / "quick")


def test_a_second_run_reruns_no_cell_and_reads_the_same_records(tmp_path):
    counter = Counting()
    first = _run(tmp_path, Identity(), counter)
    assert counter.ran == [cell.name for cell in CELLS] and {r["status"] for r in first} == {"finished"}
    assert sorted(p.name for p in (tmp_path / "results" / "quick").iterdir()) == sorted(f"{c.name}.json" for c in CELLS)

    again = Counting()
    second = _run(tmp_path, Identity(), again)
    assert again.ran == [] and {r["status"] for r in second} == {"skipped"}
    tables = [grid_tables(records) for records in (first, second)]
    for before, after in zip(*tables):
        assert before.drop(columns=["status"], errors="ignore").equals(after.drop(columns=["status"], errors="ignore"))


def test_another_machine_with_the_summaries_only_reruns_nothing(tmp_path):
    _run(tmp_path, Identity(), Counting())
    shutil.rmtree(tmp_path / "cache")  # a fresh clone: the committed summaries, no cache of whole records
    fresh = Counting()
    records = _run(tmp_path, Identity(), fresh, cache="other_cache")
    assert fresh.ran == [] and {r["status"] for r in records} == {"skipped"}
    assert records[0]["result"]["end_outcomes"]["won"] == [1, 0, 0, 0]


def test_a_changed_setting_reruns_only_that_cell_and_the_log_names_it(tmp_path, caplog):
    _run(tmp_path, Identity(), Counting())
    counter = Counting()
    with caplog.at_level(logging.INFO, logger="hindsight.experiments.resume"):
        records = _run(tmp_path, Identity(learning_rates={"seed-f100-s1": 3e-4}), counter)
    assert counter.ran == ["seed-f100-s1"]
    assert [r["status"] for r in records] == ["skipped", "skipped", "skipped", "finished"]
    assert "seed-f100-s1: its settings changed" in caplog.text and "rl.learning_rate: 0.0001 -> 0.0003" in caplog.text
    stored = json.loads((tmp_path / "results" / "quick" / "seed-f100-s1.json").read_text())
    assert stored["settings"]["rl.learning_rate"] == 3e-4


def test_an_execution_only_setting_reruns_nothing(tmp_path):
    _run(tmp_path, Identity(), Counting())

    class NoProgressBar(Identity):
        def settings_of(self, cell):
            return {**super().settings_of(cell), "rl": {"learning_rate": 1e-4, "progress": False}}

    counter = Counting()
    _run(tmp_path, NoProgressBar(), counter)
    assert counter.ran == []


def test_other_starting_weights_keep_the_summary_and_say_so(tmp_path, caplog):
    _run(tmp_path, Identity(), Counting())
    counter = Counting()
    with caplog.at_level(logging.WARNING, logger="hindsight.experiments.resume"):
        records = _run(tmp_path, Identity(weights="weights-of-another-machine"), counter, cache="other_cache")
    assert counter.ran == [] and {r["status"] for r in records} == {"skipped"}
    assert "grpo-f100-s0: kept from" in caplog.text and "other starting weights" in caplog.text


def test_a_failed_cell_writes_no_summary_and_runs_again(tmp_path):
    def failing(cell):
        if cell.name == "seed-f100-s0":
            raise RuntimeError("boom")
        return Counting()(cell)

    records = _run(tmp_path, Identity(), failing)
    assert [r["status"] for r in records] == ["finished", "failed", "finished", "finished"]
    assert not (tmp_path / "results" / "quick" / "seed-f100-s0.json").exists()
    counter = Counting()
    _run(tmp_path, Identity(), counter)
    assert counter.ran == ["seed-f100-s0"]

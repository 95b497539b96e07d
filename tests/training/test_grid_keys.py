"""The experiment grid's cell key: what decides a cell's result changes it; display and
memory settings (a progress bar, micro-batch sizes) do not, so they never retrain a cell."""

from __future__ import annotations


import pytest

from hindsight.experiments.grid import Cell, cell_key

pytestmark = pytest.mark.unit

SETTINGS = {
    "start_from": "stage1",
    "rl": {"learning_rate": 1e-4, "micro_batch_tokens": 8192, "updates": 4},
    "rollout": {"sampling": {"temperature": 0.4}, "progress": True, "max_parallel": 32},
}


def key(**changes):
    settings = {name: dict(block) if isinstance(block, dict) else block for name, block in SETTINGS.items()}
    for path, value in changes.items():
        block, name = path.split("__")
        settings[block][name] = value
    return cell_key(Cell(method="seed", seed=0, fraction=1.0), settings, "weights-abc")


def test_execution_only_settings_leave_the_key_alone():
    assert key(rollout__progress=False) == key()
    assert key(rl__micro_batch_tokens=None) == key()


def test_settings_that_change_results_change_the_key():
    assert key(rl__learning_rate=2e-4) != key()
    assert key(rollout__sampling={"temperature": 1.0}) != key()
    assert cell_key(Cell(method="seed", seed=1, fraction=1.0), SETTINGS, "weights-abc") != key()
    assert cell_key(Cell(method="seed", seed=0, fraction=1.0), SETTINGS, "weights-xyz") != key()

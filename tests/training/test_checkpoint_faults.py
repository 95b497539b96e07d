"""A checkpoint that cannot be written (disk full, no permission) fails with a clear error
naming the directory, and the last good checkpoint stays complete and loadable."""

from __future__ import annotations

import errno

import pytest
import torch

from hindsight.atomic import DirectoryWriteError
from hindsight.training import checkpoint
from hindsight.training.checkpoint import latest_checkpoint, load_training_state, save_checkpoint

pytestmark = pytest.mark.unit


def test_a_full_disk_keeps_the_last_good_checkpoint(tiny_policy, tmp_path, monkeypatch):
    optimizer = torch.optim.AdamW(tiny_policy.model.parameters(), lr=1e-3)
    save_checkpoint(tmp_path, 1, tiny_policy, optimizer, extra={"history": [{"update": 1}]})

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint.torch, "save", disk_full)
    with pytest.raises(DirectoryWriteError, match="update_000002.*No space left on device"):
        save_checkpoint(tmp_path, 2, tiny_policy, optimizer)
    monkeypatch.undo()

    assert latest_checkpoint(tmp_path).name == "update_000001"
    assert load_training_state(latest_checkpoint(tmp_path)).extra["history"] == [{"update": 1}]
    assert [p.name for p in tmp_path.iterdir()] == ["update_000001"]  # no partial directory left


def test_an_unusable_checkpoint_root_is_named(tiny_policy, tmp_path):
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("a file where the checkpoint root should be")
    optimizer = torch.optim.AdamW(tiny_policy.model.parameters(), lr=1e-3)
    with pytest.raises(DirectoryWriteError, match="not_a_directory"):
        save_checkpoint(blocker, 1, tiny_policy, optimizer)
    assert blocker.read_text().startswith("a file")

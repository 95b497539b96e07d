"""A kill during a checkpoint write leaves a staging directory (a whole model copy) that a
resume ignores and the next complete save removes (the checkpoint side of
tests/reliability/test_kill_resume.py, which kills a whole ``kedro run``)."""

from __future__ import annotations

import torch

from hindsight.training.checkpoint import latest_checkpoint, save_checkpoint


def test_a_complete_save_removes_the_staging_directory_a_kill_left(tiny_policy, tmp_path):
    """A kill during a checkpoint write leaves its staging directory (a whole model copy):
    ignored by the resume, removed by the next complete save."""
    optimizer = torch.optim.AdamW(tiny_policy.model.parameters(), lr=1e-3)
    save_checkpoint(tmp_path, 1, tiny_policy, optimizer)
    stale = tmp_path / ".update_000002.partial-0badf00d"
    (stale / "policy").mkdir(parents=True)
    (stale / "state.pt").write_bytes(b"half written")
    assert latest_checkpoint(tmp_path).name == "update_000001"
    save_checkpoint(tmp_path, 2, tiny_policy, optimizer)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["update_000001", "update_000002"]

"""``hooks.run_record``: the tags that tie an MLflow run to the code and parameters behind it."""

from __future__ import annotations

import subprocess

from hindsight.hooks import run_record


def test_the_record_names_the_commit_and_hashes_the_parameters(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "a.txt").write_text("x")
    subprocess.run(["git", "add", "a.txt"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c"], cwd=tmp_path, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    clean = run_record({"seed": 0}, tmp_path)
    assert clean["git.commit"] == head
    (tmp_path / "a.txt").write_text("changed")
    assert run_record({"seed": 0}, tmp_path)["git.commit"] == head + "-dirty"
    assert clean["params.sha1"] == run_record({"seed": 0}, tmp_path)["params.sha1"] != run_record({"seed": 1}, tmp_path)["params.sha1"]
    assert clean["version.torch"] != "not installed"
    assert "git.dirty" not in clean and "git.diff_sha1" not in clean


def test_a_dirty_tree_says_what_differs(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "a.txt").write_text("x")
    subprocess.run(["git", "add", "a.txt"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c"], cwd=tmp_path, check=True)
    (tmp_path / "a.txt").write_text("changed")
    (tmp_path / "new.py").write_text("")
    first = run_record({}, tmp_path)
    assert first["git.commit"].endswith("-dirty")
    assert "a.txt" in first["git.dirty"] and "new.py" in first["git.dirty"]
    assert run_record({}, tmp_path)["git.diff_sha1"] == first["git.diff_sha1"]  # the same edits, the same hash
    (tmp_path / "a.txt").write_text("changed again")
    assert run_record({}, tmp_path)["git.diff_sha1"] != first["git.diff_sha1"]


def test_outside_a_git_work_tree_the_commit_is_unknown(tmp_path):
    assert run_record({}, tmp_path)["git.commit"].startswith("unknown")

"""MemoryReleaseHooks: memory is handed back after the nodes that ran long enough to churn
it, not after every quick node (a full garbage collection costs about half a second)."""

from __future__ import annotations

from types import SimpleNamespace

from hindsight.hooks import resources


def test_only_nodes_that_ran_long_enough_release(monkeypatch):
    released, clock = [], [100.0]
    monkeypatch.setattr(resources, "release_free_memory", lambda: released.append(True))
    monkeypatch.setattr(resources.time, "perf_counter", lambda: clock[0])
    hooks = resources.MemoryReleaseHooks()

    quick, long_ = SimpleNamespace(name="quick"), SimpleNamespace(name="long")
    hooks.before_node_run(quick)
    clock[0] += hooks.min_seconds / 4
    hooks.after_node_run(quick)
    assert released == []

    hooks.before_node_run(long_)
    clock[0] += hooks.min_seconds
    hooks.after_node_run(long_)
    assert released == [True]


def test_a_node_it_did_not_see_start_still_releases(monkeypatch):
    released = []
    monkeypatch.setattr(resources, "release_free_memory", lambda: released.append(True))
    resources.MemoryReleaseHooks().after_node_run(SimpleNamespace(name="unseen"))
    assert released == [True]

"""Fixtures of the stage1 tests."""

from recorded_episodes import recorded_tables  # noqa: F401  (the session fixture, shared with the skills tests)

"""Fixtures of the skills tests."""

from recorded_episodes import recorded_tables  # noqa: F401  (the session fixture, shared with the Stage-1 tests)

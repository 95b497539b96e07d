"""A base for the small in-test environments (imported by test modules): a ``TextEnvironment``
whose task seeds are consecutive integers and whose restart and close do nothing, so a test
writes only the ``reset`` and ``step`` its case needs (and ``GOLD``, the expert actions)."""

from __future__ import annotations

from hindsight.envs.base import EnvironmentSpec, TextEnvironment


class ToyEnvironment(TextEnvironment):
    """Seeds ``offset .. offset + count - 1`` in every fold; ``gold_actions`` returns ``GOLD``."""

    GOLD: tuple[str, ...] = ()

    def __init__(self, spec: EnvironmentSpec | None = None) -> None:
        if spec is not None:
            self.spec = spec

    def gold_actions(self):
        return list(self.GOLD)

    def seeds(self, split, count, offset=0):
        return list(range(offset, offset + count))

    def restart(self):
        pass

    def close(self):
        pass

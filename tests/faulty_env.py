"""Environments that fail on purpose (imported by test modules): ``HangsOnOneTask``, a real
TextWorldExpress environment whose simulator 'hangs' on one task."""

from __future__ import annotations

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentTimeoutError


class HangsOnOneTask:
    """A real TWX environment whose simulator 'hangs' (times out) on the 2nd step of task
    ``seed`` (set it with ``monkeypatch.setattr(HangsOnOneTask, "seed", ...)``)."""

    seed: int | None = None

    def __init__(self, spec) -> None:
        self.env, self.spec, self.playing, self.steps = make_env(spec), spec, None, 0

    def reset(self, seed, split="train"):
        self.playing, self.steps = seed, 0
        return self.env.reset(seed, split)

    def step(self, action):
        self.steps += 1
        if self.playing == type(self).seed and self.steps == 2:
            raise EnvironmentTimeoutError("simulated hang")
        return self.env.step(action)

    def restart(self) -> None:
        self.env.restart()

    def close(self) -> None:
        self.env.close()

"""What a rollout does when an environment fails under an episode, and what it reports.

An environment fails in two ways (``hindsight.envs.base``): its backend dies (a killed or
out-of-memory JVM: ``EnvironmentCrashedError``), or one simulator call hangs past the spec's
``step_timeout_s`` (the watchdog kills the JVM: ``EnvironmentTimeoutError``). The episode
playing on it is then FAILED: it is not replayed, and its rows and step samples are left out
of the rollout table (a cut-off trajectory has no outcome to learn from, and the table keeps
its contract: every episode ends on a ``done`` row). The environment is restarted (a fresh
JVM; one that cannot restart is dropped and the pool builds a new one) and the next episodes
play on. With a shared JVM, every episode live on it when it dies fails on its next call.

An episode that meets a failure before its first step (building its environment, or at
``reset``: e.g. an idle pooled environment whose JVM died meanwhile) has played nothing: its
environment is restarted and the start tried once more; a second failure fails the episode.

What is reported (``RolloutFaults``): each failed episode with its reason (``STEP_TIMEOUT``
or ``ENV_CRASH``), step and error text (``RolloutResult.faults.failed``), and the counts
``faults/failed_episodes``, ``faults/failed_episode_rate`` (of the planned episodes),
``faults/step_timeouts`` and ``faults/env_restarts``: in ``RolloutResult.stats`` (without
the prefix) and in the table's ``attrs["faults"]`` (``stats.FAULTS_ATTR``), where ``stats.rollout_metrics`` finds them
(the RL loop logs those to MLflow). A rollout whose every episode failed raises
``EnvironmentCrashedError``: the environment is broken, and there is nothing to learn from.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from hindsight.envs.base import EnvironmentCrashedError, EnvironmentTimeoutError, TextEnvironment
from hindsight.rollout.env_pool import EnvPool
from hindsight.rollout.live_episode import Episode
from hindsight.rollout.tasks import TaskRef

logger = logging.getLogger(__name__)

STEP_TIMEOUT = "step timeout"
"""Failure reason: a simulator call ran past ``step_timeout_s`` (the JVM was killed)."""
ENV_CRASH = "environment crashed"
"""Failure reason: the environment's backend died (or a call failed inside it)."""


def failure_reason(error: BaseException) -> str:
    """``STEP_TIMEOUT`` for a timeout, ``ENV_CRASH`` for any other environment crash."""
    return STEP_TIMEOUT if isinstance(error, EnvironmentTimeoutError) else ENV_CRASH


@dataclass(frozen=True)
class FailedEpisode:
    """An episode the environment failed under."""

    episode_id: str
    group_id: str
    steps: int
    """Steps it had played (their rows are not in the table)."""
    reason: str
    """``STEP_TIMEOUT`` or ``ENV_CRASH``."""
    detail: str
    """The error's message."""


@dataclass
class RolloutFaults:
    """The failures of one rollout (see the module docstring)."""

    planned: int = 0
    """Episodes the rollout set out to play."""
    failed: list[FailedEpisode] = field(default_factory=list)
    env_restarts: int = 0
    """Environment restarts after a failure (each one of a dead JVM starts a new JVM)."""

    def fail(self, episode_id: str, group_id: str, steps: int, error: BaseException) -> FailedEpisode:
        """Record that an episode failed because of ``error``."""
        failure = FailedEpisode(episode_id, group_id, steps, failure_reason(error), str(error))
        self.failed.append(failure)
        logger.warning("Episode %s failed after %d steps: %s (%s)", episode_id, steps, failure.reason, error)
        return failure

    def metrics(self) -> dict[str, float]:
        """``faults/failed_episodes``, ``faults/failed_episode_rate``, ``faults/step_timeouts``,
        ``faults/env_restarts``."""
        failed = len(self.failed)
        return {
            "faults/failed_episodes": float(failed),
            "faults/failed_episode_rate": failed / self.planned if self.planned else 0.0,
            "faults/step_timeouts": float(sum(f.reason == STEP_TIMEOUT for f in self.failed)),
            "faults/env_restarts": float(self.env_restarts),
        }

    def stats(self) -> dict[str, float]:
        """``metrics()`` without the ``faults/`` prefix (for ``RolloutResult.stats``)."""
        return {name.split("/", 1)[1]: value for name, value in self.metrics().items()}

    def check_some_finished(self, finished: int) -> None:
        """Raise ``EnvironmentCrashedError`` when every planned episode failed."""
        if self.planned and self.failed and finished == 0:
            reasons = "; ".join(sorted({f"{f.reason}: {f.detail[:200]}" for f in self.failed}))
            raise EnvironmentCrashedError(
                f"Every one of the {self.planned} episodes of the rollout failed; the environment "
                f"looks broken ({reasons})."
            )


def restart_env(pool: EnvPool, env: TextEnvironment, faults: RolloutFaults) -> None:
    """Restart a failed borrowed environment and give it back to ``pool``; one whose restart
    fails is closed and dropped (the pool builds a new one when asked)."""
    try:
        env.restart()
    except Exception as error:  # noqa: BLE001 - a dead env is dropped; the factory's error surfaces on rebuild
        logger.warning("Restarting a failed environment failed (%s); dropping it.", error)
        pool.discard(env)
        return
    faults.env_restarts += 1
    pool.release(env)


def start_episode(
    pool: EnvPool,
    task: TaskRef,
    episode_id: str,
    build: Callable[[TextEnvironment], Episode],
    faults: RolloutFaults,
) -> Episode | None:
    """Borrow an environment for ``task`` and start the episode ``build(env)`` makes on it.

    A failure before the first step (building the environment, or its reset) restarts the
    environment and tries once more (the episode had played nothing); a second one fails
    the episode.

    Returns:
        The started episode, or None when it failed (recorded in ``faults``).
    """
    for attempt in range(2):
        env = None
        try:
            env = pool.acquire(task.spec)
            episode = build(env)
            episode.start()
            return episode
        except EnvironmentCrashedError as error:
            if env is not None:
                restart_env(pool, env, faults)
            if attempt == 1:
                faults.fail(episode_id, task.group_id, 0, error)
                return None
            logger.warning("Episode %s: the environment failed before its first step (%s); again.", episode_id, error)
    return None

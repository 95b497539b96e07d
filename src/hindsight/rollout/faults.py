"""What a rollout records when an environment fails under an episode.

An environment fails in two ways (``hindsight.envs.base``): its backend dies (a killed or
out-of-memory JVM: ``EnvironmentCrashedError``), or one simulator call hangs past the spec's
``step_timeout_s`` (the watchdog kills the JVM: ``EnvironmentTimeoutError``). The episode
playing on it is then replayed from its start on a restarted environment, same task and
seed, up to ``RolloutConfig.episode_replays`` times (``rollout.replay`` decides, and says
when the run stops instead); a cut-off try leaves no row or step sample in the rollout
table (it has no outcome to learn from, and the table keeps its contract: every episode
ends on a ``done`` row).

What is recorded here (``RolloutFaults``): each failed try that was replayed
(``replayed``) and each episode given up after its tries (``failed``: it is missing from
the table), with its reason (``STEP_TIMEOUT`` or ``ENV_CRASH``), step and error text, and
the counts ``faults/failed_episodes`` (planned episodes missing from the table),
``faults/failed_episode_rate`` (of the planned episodes), ``faults/episode_replays``
(failed tries played again), ``faults/step_timeouts`` (tries cut by the watchdog) and
``faults/env_restarts``: in ``RolloutResult.stats`` (without the prefix) and in the table's
``attrs["faults"]`` (``stats.FAULTS_ATTR``), where ``stats.rollout_metrics`` finds them (the
RL loop logs those to MLflow).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hindsight.envs.base import EnvironmentCrashedError, EnvironmentTimeoutError

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
    """One try of an episode that the environment failed under."""

    episode_id: str
    group_id: str
    steps: int
    """Steps the try had played (their rows are not in the table)."""
    reason: str
    """``STEP_TIMEOUT`` or ``ENV_CRASH``."""
    detail: str
    """The error's message."""

    @classmethod
    def of(cls, episode_id: str, group_id: str, steps: int, error: BaseException) -> "FailedEpisode":
        """The record of a try that ``error`` ended after ``steps`` steps."""
        return cls(episode_id, group_id, steps, failure_reason(error), str(error))


@dataclass
class RolloutFaults:
    """The failures of one rollout (see the module docstring)."""

    planned: int = 0
    """Episodes the rollout set out to play."""
    failed: list[FailedEpisode] = field(default_factory=list)
    """Episodes given up after their tries (the last try's record): missing from the table."""
    replayed: list[FailedEpisode] = field(default_factory=list)
    """Failed tries that were played again from the start."""
    env_restarts: int = 0
    """Environment restarts after a failure (each one of a dead JVM starts a new JVM)."""

    def fail(self, failure: FailedEpisode) -> None:
        """Record that an episode is given up (it will be missing from the table)."""
        self.failed.append(failure)
        logger.warning(
            "Episode %s failed after %d steps and is given up: %s (%s)",
            failure.episode_id, failure.steps, failure.reason, failure.detail,
        )

    def replay(self, failure: FailedEpisode) -> None:
        """Record that a failed try of an episode is played again from its start."""
        self.replayed.append(failure)
        logger.warning(
            "Episode %s: its environment failed after %d steps (%s: %s); replaying it from the start.",
            failure.episode_id, failure.steps, failure.reason, failure.detail,
        )

    def metrics(self) -> dict[str, float]:
        """``faults/failed_episodes``, ``faults/failed_episode_rate``, ``faults/episode_replays``,
        ``faults/step_timeouts``, ``faults/env_restarts``."""
        failed = len(self.failed)
        tries = self.failed + self.replayed
        return {
            "faults/failed_episodes": float(failed),
            "faults/failed_episode_rate": failed / self.planned if self.planned else 0.0,
            "faults/episode_replays": float(len(self.replayed)),
            "faults/step_timeouts": float(sum(f.reason == STEP_TIMEOUT for f in tries)),
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

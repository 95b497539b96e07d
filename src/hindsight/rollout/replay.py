"""Replaying an episode whose environment failed under it, and when to stop trying.

An environment dies under a rollout (a killed JVM, or a call hung past ``step_timeout_s``
that the watchdog ended by killing it; ``hindsight.envs.base``). With a shared JVM every
episode live on it meets the death on its next call. Each such episode is replayed from its
start, with the same episode id, task and seed, on a restarted environment
(``restart_env``: a fresh JVM; one that cannot restart is dropped and the pool builds a new
one); its cut-off try leaves nothing in the table. So a death costs the replayed steps (a
few seconds) and loses no episode.

Tries are bounded: an episode is played at most ``1 + max_replays`` times
(``RolloutConfig.episode_replays``). When its last try fails too (``Replays.failed_try``):

- every try died with the backend (``ENV_CRASH``): the environment keeps failing, and the
  run stops with ``EnvironmentCrashedError`` naming the environment, its game and the
  tries (playing on would lose episode after episode);
- some try hung (``STEP_TIMEOUT``): the simulator loops on that task rather than failing
  to run, so the episode is given up (missing from the table, counted in
  ``faults/failed_episodes``) and the rollout goes on.

A failure before the first step (building the environment, or its ``reset``: e.g. an idle
pooled environment whose JVM died between two rollouts) gets one free retry on a restarted
environment inside ``start_episode`` (the episode had played nothing); a second one is a
failed try like any other. What is recorded: ``rollout.faults``.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Callable

from hindsight.envs.base import EnvironmentCrashedError, TextEnvironment
from hindsight.rollout.env_pool import EnvPool
from hindsight.rollout.faults import ENV_CRASH, FailedEpisode, RolloutFaults
from hindsight.rollout.live_episode import Episode
from hindsight.rollout.tasks import TaskRef

logger = logging.getLogger(__name__)


class Replays:
    """The tries of each episode of one rollout (see the module docstring).

    Args:
        faults: Where the failed tries and the given-up episodes are recorded.
        max_replays: Replays an episode gets after its first try fails (>= 0).
    """

    def __init__(self, faults: RolloutFaults, max_replays: int) -> None:
        if max_replays < 0:
            raise ValueError(f"rollout.episode_replays must be >= 0, got {max_replays}.")
        self.faults = faults
        self.max_replays = max_replays
        self._tries: dict[str, list[FailedEpisode]] = {}

    def failed_try(self, task: TaskRef, episode_id: str, steps: int, error: EnvironmentCrashedError) -> bool:
        """Record that a try of ``episode_id`` failed after ``steps`` steps because of ``error``.

        Returns:
            True: play the episode again from its start; False: it is given up (recorded in
            ``faults.failed``).

        Raises:
            EnvironmentCrashedError: The episode's every try died with its environment (the
                message names the environment, the game and the tries).
        """
        failure = FailedEpisode.of(episode_id, task.group_id, steps, error)
        tries = self._tries.setdefault(episode_id, [])
        tries.append(failure)
        if len(tries) <= self.max_replays:
            self.faults.replay(failure)
            return True
        if all(attempt.reason == ENV_CRASH for attempt in tries):
            spec = task.spec
            raise EnvironmentCrashedError(
                f"The {spec.env} environment (game {spec.game!r}) keeps failing: episode {episode_id} "
                f"failed on all {len(tries)} tries (1 play + {self.max_replays} replays, "
                f"rollout.episode_replays), each time with its backend dead. Last error: {failure.detail}"
            ) from error
        self.faults.fail(failure)
        return False

    def requeue(self, queue: deque, item: tuple[int, TaskRef, str], steps: int, error: EnvironmentCrashedError) -> bool:
        """``failed_try`` for a planned ``(order, task, episode_id)``: put it back at the front
        of ``queue`` when it is to be played again.

        Returns:
            Whether it was queued again (False: given up).
        """
        _, task, episode_id = item
        again = self.failed_try(task, episode_id, steps, error)
        if again:
            queue.appendleft(item)
        return again


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
) -> Episode:
    """Borrow an environment for ``task`` and start the episode ``build(env)`` makes on it.

    A failure before the first step (building the environment, or its reset) restarts the
    environment and tries once more (the episode had played nothing).

    Returns:
        The started episode.

    Raises:
        EnvironmentCrashedError: The second start failed too (a failed try for ``Replays``).
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
                raise
            logger.warning("Episode %s: the environment failed before its first step (%s); again.", episode_id, error)
    raise AssertionError("unreachable")

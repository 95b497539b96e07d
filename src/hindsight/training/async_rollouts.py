"""Where the RL loop's rollouts come from: the synchronous producer (the learner plays them
itself) or the asynchronous one (EvoCUA-1.5 reading, ALGORITHMS.md section 5, ours): a
rollout worker process generates the rollouts of the next updates while the learner trains.

``train_rl`` asks one producer, chosen by ``training.rl.async_rollouts``, for the rollout of
each update (``next_rollout``), the proximal log-probs of its samples (``proximal_logprobs``)
and tells it when a new policy version exists (``publish``). Versions count updates: the
starting policy of update ``u`` is version ``u``.

Asynchronous, with ``max_staleness = k``:

- the worker (``training.rollout_worker``: its own process, its own torch thread budget,
  the environments) plays the rollout of update ``u`` with the newest weights it holds;
- the learner asks for the rollout of update ``u`` only once version ``u - k`` is
  published, through the same FIFO as the weights, so every sample's staleness (learner
  version minus the version that generated it) is at most ``k``: generation is held back,
  no late sample is ever dropped (discarding starves the slow, hard tasks);
- k = 0 is lock-step: the worker plays with exactly the learner's weights, the results equal
  the synchronous loop's (same seeds, CPU, same thread count);
- the update is decoupled PPO (``algorithms.decoupled_ppo_loss``): the behaviour log-probs
  recorded at sampling time, the proximal log-probs recomputed by the learner (its version
  before the update) for the stale samples; a fresh sample's behaviour log-probs are its
  proximal ones.

A whole rollout is played with one version (weights are loaded between rollouts, not
mid-episode), so ``async/staleness_mean`` and ``async/staleness_max`` are equal within an
update today; both are logged as the issue asks. ``async/learner_wait_seconds`` is the time
the learner blocked on the rollout; ``async/worker_wait_seconds`` the time the worker sat idle
before playing it.

With k >= 1 a run is not bit-reproducible: which version plays a rollout depends on timing
(bounded by k either way). A resumed run starts a fresh worker from the checkpoint's weights;
rollouts played ahead but not yet trained on when the run was killed are played again.

A worker that dies or raises surfaces in the learner as ``RolloutWorkerError`` (with the
worker's traceback); leaving the ``with`` block (normally, on an exception or on
KeyboardInterrupt) stops the worker: asked first, then terminated, then killed.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import pickle
import queue
import time
from typing import Callable, Sequence

import pandas as pd
import torch

from hindsight.policy.encoding import StepSample
from hindsight.rollout.engine import RolloutConfig, RolloutResult, run_rollouts
from hindsight.rollout.tasks import TaskRef, sample_update_tasks
from hindsight.training.distillation import response_logprobs
from hindsight.training.rl_config import RLConfig
from hindsight.training.rollout_worker import pack, trainable_weights, unpack, worker_main

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5
"""How often a waiting learner checks that the worker is still alive."""
STOP_GRACE_SECONDS = 10.0
"""How long a stopping worker may take before it is terminated (then killed)."""


class RolloutWorkerError(RuntimeError):
    """The rollout worker failed (raised, crashed or was killed)."""


def update_rollout_request(
    pool: Sequence[TaskRef], rollout_config: RolloutConfig, config: RLConfig, seed: int, update: int
) -> tuple[list[TaskRef], RolloutConfig]:
    """The tasks and rollout settings of update ``update`` (the same in both producers)."""
    tasks = sample_update_tasks(pool, config.tasks_per_update, seed, update)
    return tasks, dataclasses.replace(rollout_config, group_size=config.group_size, seed=seed * 1_000_003 + update)


class SyncRollouts:
    """Today's loop: the learner plays update ``u``'s rollout itself with version ``u``."""

    def __init__(self, policy, env_factory: Callable, pool, rollout_config: RolloutConfig, config: RLConfig, seed: int):
        self.policy, self.env_factory, self.pool = policy, env_factory, pool
        self.rollout_config, self.config, self.seed = rollout_config, config, seed

    def __enter__(self) -> "SyncRollouts":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def next_rollout(self, update: int) -> tuple[RolloutResult, dict[str, float]]:
        """The rollout of ``update`` and its producer metrics (none here)."""
        tasks, settings = update_rollout_request(self.pool, self.rollout_config, self.config, self.seed, update)
        return run_rollouts(self.policy, self.env_factory, tasks, settings, policy_version=update), {}

    def proximal_logprobs(self, table: pd.DataFrame, samples, old_logp, update: int) -> None:
        """None: every sample is fresh, plain PPO."""
        return None

    def publish(self, version: int) -> None:
        """Nothing to send: the learner's policy is the actor."""


class AsyncRollouts:
    """A rollout worker process generating up to ``max_staleness`` versions ahead."""

    def __init__(
        self, policy, env_factory: Callable, pool, rollout_config: RolloutConfig, config: RLConfig, seed: int,
        start_update: int, end_update: int,
    ):
        self.policy, self.env_factory, self.pool = policy, env_factory, pool
        self.rollout_config, self.config, self.seed = rollout_config, config, seed
        self.start_update, self.end_update = start_update, end_update
        self.requested = start_update  # the next update whose rollout is not yet asked for
        self.process = None

    def __enter__(self) -> "AsyncRollouts":
        context = multiprocessing.get_context("spawn")  # no fork of a process holding torch threads or a JVM
        self.inbox, self.outbox = context.Queue(), context.Queue()
        blob = pickle.dumps(self.policy, protocol=pickle.HIGHEST_PROTOCOL)
        self.process = context.Process(
            target=worker_main,
            args=(blob, self.start_update, self.env_factory, self.config.async_worker_threads, self.inbox, self.outbox),
            name="hindsight-rollout-worker",
            daemon=True,
        )
        try:
            self.process.start()
            logger.info(
                "Rollout worker started (pid %d, %d thread(s), max staleness %d)",
                self.process.pid, self.config.async_worker_threads, self.config.async_max_staleness,
            )
            self._request_up_to(self.start_update + self.config.async_max_staleness)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _request_up_to(self, last: int) -> None:
        """Ask for the rollouts of every update up to ``last`` (inclusive) not asked yet."""
        while self.requested <= min(last, self.end_update - 1):
            tasks, settings = update_rollout_request(self.pool, self.rollout_config, self.config, self.seed, self.requested)
            self.inbox.put(pack(("rollout", self.requested, tasks, settings)))
            self.requested += 1

    def next_rollout(self, update: int) -> tuple[RolloutResult, dict[str, float]]:
        """Block until the worker delivers ``update``'s rollout; it and the ``async/`` metrics."""
        started = time.perf_counter()
        while True:
            try:
                message = unpack(self.outbox.get(timeout=POLL_SECONDS))
                break
            except queue.Empty:
                if not self.process.is_alive():
                    self._raise_dead(update)
        if message[0] == "error":
            raise RolloutWorkerError(f"the rollout worker failed on the rollout of update {message[1]}:\n{message[2]}")
        _, delivered, version, result, timings = message
        if delivered != update:
            raise RolloutWorkerError(f"the rollout worker delivered update {delivered}'s rollout, update {update} expected")
        staleness = update - result.table["policy_version"].to_numpy()
        if len(staleness) and (staleness.max() > self.config.async_max_staleness or staleness.min() < 0):
            raise RolloutWorkerError(
                f"update {update}: samples of policy versions {sorted(set(result.table['policy_version']))} break the "
                f"staleness bound {self.config.async_max_staleness}"
            )
        metrics = {
            "async/staleness_mean": float(staleness.mean()) if len(staleness) else 0.0,
            "async/staleness_max": float(staleness.max()) if len(staleness) else 0.0,
            "async/learner_wait_seconds": time.perf_counter() - started,
            "async/worker_wait_seconds": timings["worker_wait_seconds"],
            "async/worker_rollout_seconds": timings["worker_rollout_seconds"],
        }
        return result, metrics

    def _raise_dead(self, update: int) -> None:
        try:  # its last words may still be in the pipe
            message = unpack(self.outbox.get(timeout=POLL_SECONDS))
        except queue.Empty:
            message = None
        if message is not None and message[0] == "error":
            raise RolloutWorkerError(f"the rollout worker failed on the rollout of update {message[1]}:\n{message[2]}")
        raise RolloutWorkerError(
            f"the rollout worker (pid {self.process.pid}) died with exit code {self.process.exitcode} "
            f"while the learner waited for the rollout of update {update}"
        )

    def proximal_logprobs(
        self, table: pd.DataFrame, samples: Sequence[StepSample], old_logp: Sequence[torch.Tensor], update: int
    ) -> list[torch.Tensor]:
        """Per sample, the learner's (version ``update``) log-probs of its response: the
        recorded behaviour ones where the sample is fresh, recomputed where it is stale."""
        stale = [i for i, version in enumerate(table["policy_version"].tolist()) if version != update]
        proximal = list(old_logp)
        if stale:
            recomputed = response_logprobs(
                self.policy.model, [samples[i] for i in stale], self.config.mini_batch_size,
                self.policy.tokenizer.pad_token_id, token_budget=self.config.micro_batch_tokens,
            )
            for i, logp in zip(stale, recomputed):
                proximal[i] = logp
        return proximal

    def publish(self, version: int) -> None:
        """Send version ``version``'s weights, then the requests it unlocks."""
        self.inbox.put(pack(("weights", version, trainable_weights(self.policy.model))))
        self._request_up_to(version + self.config.async_max_staleness)

    def close(self) -> None:
        """Stop the worker: ask, wait ``STOP_GRACE_SECONDS``, terminate, kill."""
        if self.process is None:
            return
        process, self.process = self.process, None
        if process.is_alive():
            try:
                self.inbox.put(pack(("stop",)))
            except (OSError, ValueError):
                pass
            process.join(STOP_GRACE_SECONDS)
        if process.is_alive():
            logger.warning("Rollout worker (pid %d) did not stop: terminating it", process.pid)
            process.terminate()
            process.join(STOP_GRACE_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()
        for channel in (self.inbox, self.outbox):
            channel.cancel_join_thread()  # unread messages must not block the learner's exit
            channel.close()
        logger.info("Rollout worker (pid %s) stopped with exit code %s", process.pid, process.exitcode)

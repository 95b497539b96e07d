"""The rollout worker of asynchronous RL: a second process that owns the environments and
a copy of the policy, and plays the rollouts the learner asks for with the freshest weights
it has (``training.async_rollouts`` is the learner's side).

The learner and the worker talk through two queues, each message a pickled tuple:

- learner -> worker (``inbox``, one FIFO): ``("weights", version, {name: tensor})`` after
  every update, ``("rollout", key, tasks, rollout_config)`` for each mini-group wanted
  (``key``: ``(update, round, chunk)``, ``training.async_batches``), and ``("stop",)``;
- worker -> learner (``outbox``): ``("rollout", key, version, RolloutResult, timings)``
  or ``("error", key, traceback text)``.

Because one FIFO carries both, a request always finds every weight version published
before it already loaded: that is what bounds the staleness (the learner issues the requests
of update ``u`` only once version ``u - max_staleness`` is published). Before playing, the
worker takes every message already waiting (newer weights: loaded, so it plays with the
freshest version; requests: queued) and plays the waiting request with the smallest key
first, so a refill round of the update the learner is on goes ahead of later updates.

Messages are pickled by hand (plain ``pickle``, so tensors travel as bytes through the
pipe instead of one shared-memory file descriptor each). The weights sent are the trainable
parameters only (a LoRA policy sends its adapters).

``ProcessWorker`` is the learner's end of it (``async_rollouts.engine: process``);
``training.ray_rollouts`` is the other engine (``ray``: N Ray actors), with the same four calls
(``start``, ``send_rollout``, ``send_weights``, ``receive``) and ``close``.
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import queue
import signal
import time
import traceback

import torch

from hindsight.rollout.engine import run_rollouts
from hindsight.training.async_batches import Delivery, RequestKey, describe_key

POLL_SECONDS = 0.5
"""How often a waiting learner checks that the worker is still alive."""
STOP_GRACE_SECONDS = 10.0
"""How long a stopping worker may take before it is terminated (then killed)."""

logger = logging.getLogger(__name__)


def pack(message: tuple) -> bytes:
    """One queue message as bytes (plain pickle: tensors by value)."""
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(blob: bytes) -> tuple:
    """The message ``pack`` wrote."""
    return pickle.loads(blob)


def trainable_weights(model) -> dict[str, torch.Tensor]:
    """The parameters the learner trains (what changes between versions), detached on CPU."""
    return {name: p.detach().cpu().clone() for name, p in model.named_parameters() if p.requires_grad}


def load_weights(model, weights: dict[str, torch.Tensor]) -> None:
    """Copy ``trainable_weights`` of the learner's model into this copy of it, in place."""
    parameters = dict(model.named_parameters())
    unknown = sorted(set(weights) - set(parameters))
    if unknown:
        raise KeyError(f"rollout worker: the learner sent weights its policy does not have: {unknown[:5]}")
    with torch.no_grad():
        for name, tensor in weights.items():
            parameters[name].copy_(tensor.to(parameters[name].device))


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)


def worker_main(policy_blob: bytes, version: int, env_factory, threads: int, inbox, outbox) -> None:
    """The worker process: play the requested rollouts until told to stop.

    Args:
        policy_blob: The pickled starting policy (its weights are version ``version``).
        version: The starting policy's version.
        env_factory: ``spec -> TextEnvironment`` (the environments live here).
        threads: Torch intra-op threads of this process.
        inbox: Messages from the learner.
        outbox: Results (or the error) to the learner.
    """
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    torch.set_num_threads(threads)
    policy = pickle.loads(policy_blob)
    requests: dict[tuple, tuple] = {}
    idle_since = time.perf_counter()
    key = None
    try:
        while True:
            messages = [] if requests else [unpack(inbox.get())]
            while True:  # everything already waiting: the freshest weights, every request
                try:
                    messages.append(unpack(inbox.get_nowait()))
                except queue.Empty:
                    break
            for message in messages:
                if message[0] == "stop":
                    return
                if message[0] == "weights":
                    load_weights(policy.model, message[2])
                    version = message[1]
                else:
                    requests[tuple(message[1])] = message[2:]
            if not requests:
                continue
            key = min(requests)
            tasks, settings = requests.pop(key)
            started = time.perf_counter()
            policy.version = version
            result = run_rollouts(policy, env_factory, tasks, settings, policy_version=version)
            finished = time.perf_counter()
            timings = {"worker_wait_seconds": started - idle_since, "worker_rollout_seconds": finished - started}
            outbox.put(pack(("rollout", key, version, result, timings)))
            idle_since = finished
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the learner shuts down
        return
    except SystemExit:  # terminated: exit through the normal path (atexit closes the JVMs)
        raise
    except BaseException:
        outbox.put(pack(("error", key, traceback.format_exc())))
        raise


class RolloutWorkerError(RuntimeError):
    """The rollout worker failed (raised, crashed or was killed)."""


class ProcessWorker:
    """The learner's end of one worker process (``async_rollouts.engine: process``)."""

    def __init__(self, threads: int):
        self.threads = threads
        self.process = None
        self.delivered: dict[RequestKey, Delivery] = {}

    def start(self, policy, version: int, env_factory, describe: str) -> None:
        """Spawn the worker with ``policy`` (version ``version``) and ``env_factory``."""
        context = multiprocessing.get_context("spawn")  # no fork of a process holding torch threads or a JVM
        self.inbox, self.outbox = context.Queue(), context.Queue()
        blob = pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL)
        self.process = context.Process(
            target=worker_main, args=(blob, version, env_factory, self.threads, self.inbox, self.outbox),
            name="hindsight-rollout-worker", daemon=True,
        )
        self.process.start()
        logger.info("Rollout worker started (pid %d, %d thread(s), %s)", self.process.pid, self.threads, describe)

    def send_rollout(self, key: RequestKey, tasks, settings) -> None:
        """Ask for the rollout of ``tasks`` under ``key``."""
        self.inbox.put(pack(("rollout", key, tasks, settings)))

    def send_weights(self, version: int, weights: dict[str, torch.Tensor]) -> None:
        """Send version ``version``'s weights (they reach the worker before any later request)."""
        self.inbox.put(pack(("weights", version, weights)))

    def receive(self, key: RequestKey) -> Delivery:
        """Block until the mini-group ``key`` is delivered (others arriving meanwhile are kept)."""
        while key not in self.delivered:
            try:
                message = unpack(self.outbox.get(timeout=POLL_SECONDS))
            except queue.Empty:
                if not self.process.is_alive():
                    self._raise_dead(key[0])
                continue
            if message[0] == "error":
                raise RolloutWorkerError(f"the rollout worker failed on the rollout of {describe_key(message[1])}:\n{message[2]}")
            _, delivered, version, result, timings = message
            self.delivered[tuple(delivered)] = Delivery(version, result, timings)
        return self.delivered.pop(key)

    def _raise_dead(self, update: int) -> None:
        try:  # its last words may still be in the pipe
            message = unpack(self.outbox.get(timeout=POLL_SECONDS))
        except queue.Empty:
            message = None
        if message is not None and message[0] == "error":
            raise RolloutWorkerError(f"the rollout worker failed on the rollout of {describe_key(message[1])}:\n{message[2]}")
        raise RolloutWorkerError(
            f"the rollout worker (pid {self.process.pid}) died with exit code {self.process.exitcode} "
            f"while the learner waited for the rollout of update {update}"
        )

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

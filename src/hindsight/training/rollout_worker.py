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
"""

from __future__ import annotations

import logging
import pickle
import queue
import signal
import time
import traceback
import torch

from hindsight.rollout.engine import run_rollouts

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

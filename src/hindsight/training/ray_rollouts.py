"""Rollout workers as Ray actors (``training.rl.schedulers.async_rollouts.engine: ray``):
``workers`` actors, each holding a copy of the policy, its own environments (built by the
run's environment factory in the actor's process) and its own torch thread budget
(``worker_threads``). ``training.async_rollouts`` is the learner's side; this module is the
transport that replaces the worker process and its queues (``rollout_worker.ProcessWorker``).

- **Weights**: each new version's trainable weights are put in Ray's object store once
  (``ray.put``); every request carries the handle of the newest version published when it
  was issued, and an actor fetches it only when its copy holds another version. A request
  of update ``u`` is issued only once version ``u - max_staleness`` is published (the
  learner's rule, unchanged), so every sample's staleness is bounded exactly as with the
  process worker. Which version plays a request is fixed when it is issued, not when an
  actor gets to it: for a fixed number of actors a run is reproducible, at any bound.
- **Work**: each request (a rollout round or one mini-group of it) is divided among the
  actors: contiguous runs of whole tasks (groups are never split), part ``p`` played with
  the request's rollout seed for ``p = 0`` (one actor plays exactly the process worker's
  episodes) and a seed derived from it otherwise; the parts are merged in part order into
  one delivery, so the learner sees one message per request as before. Successive
  requests start their parts on the next actor, so single-task mini-groups spread too.
- **Faults**: an actor whose process dies (killed, out of memory, its node gone) is
  restarted by Ray (``max_restarts``) from the starting policy, and the requests it held are
  submitted again (``max_task_retries``) with their weights handles: the replay plays the
  same episodes with the same version, the run goes on and its results do not change. An
  actor restarted is logged (its new pid). An exception raised by a rollout is not retried:
  it surfaces as ``RolloutWorkerError`` with the actor's traceback, as with the process.

Ray is imported here only, when this engine runs, with its usage statistics off. Without
``ray_address`` the run starts a local instance (no dashboard) and shuts it down at the
end; one this process already joined (a grid cell on Ray, a test) is used and left running.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import time
import uuid

import torch

from hindsight.ray_runtime import import_ray
from hindsight.rollout.engine import run_rollouts
from hindsight.rollout.faults import RolloutFaults
from hindsight.rollout.results import RolloutResult
from hindsight.rollout.stats import ENGINE_ATTR, FAULTS_ATTR, rollout_stats
from hindsight.training.async_batches import Delivery, RequestKey, describe_key
from hindsight.training.rollout_worker import RolloutWorkerError, load_weights

logger = logging.getLogger(__name__)

MAX_RESTARTS = 3
"""How often Ray restarts a dead rollout actor (then the run stops with ``RolloutWorkerError``)."""
ACTOR_PREFIX = "hindsight-rollout"
"""Named actors: ``<prefix>-<run token>-<index>`` (``ray.util.list_named_actors`` shows them)."""


class RolloutActor:
    """One rollout worker in its own Ray worker process (wrapped by ``ray.remote`` at start)."""

    def __init__(self, policy_blob: bytes, version: int, env_factory, threads: int):
        torch.set_num_threads(threads)
        self.policy = pickle.loads(policy_blob)
        self.version, self.env_factory = version, env_factory
        self.start_version = version
        # the start weights, for a request of the start version played after a newer one (Ray
        # does not keep an actor's order when it replays the requests of a restarted actor)
        self.start_weights = {name: tensor.detach().clone() for name, tensor in self.policy.model.state_dict().items()}
        self.idle_since = time.perf_counter()

    def pid(self) -> int:
        """This actor's process id (a new one after a restart)."""
        return os.getpid()

    def play(self, tasks, settings, version: int, weights_box: list) -> tuple[RolloutResult, dict[str, float], int]:
        """Play ``tasks`` with version ``version`` (its weights fetched from the object store
        when this copy holds another); the result, the timings and this process's id."""
        if version != self.version:
            [weights] = weights_box
            if weights is None and version == self.start_version:  # the start version: never published
                self.policy.model.load_state_dict(self.start_weights)
            else:
                import ray

                load_weights(self.policy.model, ray.get(weights))
            self.version = version
        started = time.perf_counter()
        self.policy.version = version
        result = run_rollouts(self.policy, self.env_factory, tasks, settings, policy_version=version)
        finished = time.perf_counter()
        timings = {"worker_wait_seconds": started - self.idle_since, "worker_rollout_seconds": finished - started}
        self.idle_since = finished
        return result, timings, os.getpid()


def split_parts(tasks: list, parts: int) -> list[list]:
    """``tasks`` cut into at most ``parts`` contiguous, non-empty runs of near-equal length."""
    parts = max(1, min(parts, len(tasks)))
    size, extra = divmod(len(tasks), parts)
    runs, start = [], 0
    for index in range(parts):
        end = start + size + (index < extra)
        runs.append(list(tasks[start:end]))
        start = end
    return runs


def part_seed(seed: int, part: int) -> int:
    """The rollout seed of part ``part`` of a request: the request's own for part 0."""
    return seed if part == 0 else seed * 7_919 + part


def merge_results(results: list[RolloutResult]) -> RolloutResult:
    """The parts of one request as one result: tables and samples in part order, fault and
    engine counts added up, the rollout stats of the merged table."""
    if len(results) == 1:
        return results[0]
    import pandas as pd

    table = pd.concat([result.table for result in results], ignore_index=True)
    faults = RolloutFaults(
        planned=sum(r.faults.planned for r in results), failed=[f for r in results for f in r.faults.failed],
        replayed=[f for r in results for f in r.faults.replayed], env_restarts=sum(r.faults.env_restarts for r in results),
    )
    engine: dict[str, float] = {}
    for result in results:
        for key, value in result.table.attrs.get(ENGINE_ATTR, {}).items():
            engine[key] = engine.get(key, 0.0) + value
    table.attrs = {FAULTS_ATTR: faults.metrics(), ENGINE_ATTR: engine}
    stats: dict[str, float] = {}
    for result in results:
        for key, value in result.stats.items():
            stats[key] = stats.get(key, 0.0) + value
    stats.update(rollout_stats(table))
    stats.update(faults.stats())
    return RolloutResult(table=table, samples=[s for r in results for s in r.samples], stats=stats, faults=faults)


class RayWorkers:
    """The learner's end of ``workers`` rollout actors (module docstring)."""

    def __init__(self, settings):
        self.settings = settings
        self.actors: list = []
        self.pids: list[int] = []
        self.pending: dict[RequestKey, tuple[int, list[tuple[int, object]]]] = {}
        """Per request: the version it carries, and per part the actor index and the result's ref."""
        self.version, self.weights, self.next_actor, self.restarts = 0, None, 0, 0
        self.started_ray = False

    def start(self, policy, version: int, env_factory, describe: str) -> None:
        """Join or start Ray, create the actors (each gets the pickled policy from the object
        store) and wait until every one is up."""
        ray = self.ray = import_ray()
        count, threads = self.settings.workers, self.settings.worker_threads
        if not ray.is_initialized():
            if self.settings.ray_address:
                ray.init(address=self.settings.ray_address, log_to_driver=True)
            else:  # a new local instance with room for every actor's threads
                ray.init(address="local", num_cpus=max(os.cpu_count() or 1, count * threads), include_dashboard=False,
                         log_to_driver=True)
            self.started_ray = True
        remote = ray.remote(num_cpus=threads, max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS)(RolloutActor)
        # held for the run: a restarted actor is built again from it
        blob = self.policy_blob = ray.put(pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL))
        token = uuid.uuid4().hex[:8]
        self.version = version
        self.actors = [
            remote.options(name=f"{ACTOR_PREFIX}-{token}-{index}").remote(blob, version, env_factory, threads)
            for index in range(count)
        ]
        try:
            self.pids = ray.get([actor.pid.remote() for actor in self.actors])
        except ray.exceptions.RayError as error:
            raise RolloutWorkerError(f"the rollout actors did not start: {error}") from error
        logger.info(
            "Rollout workers started: %d Ray actor(s) (pids %s, %d thread(s) each, %s)",
            count, ", ".join(map(str, self.pids)), threads, describe,
        )

    def send_rollout(self, key: RequestKey, tasks, settings) -> None:
        """Divide ``tasks`` among the actors (part order kept) and submit the parts."""
        parts = split_parts(list(tasks), len(self.actors))
        futures = []
        for part, run in enumerate(parts):
            index = (self.next_actor + part) % len(self.actors)
            played = dataclasses.replace(settings, seed=part_seed(settings.seed, part))
            futures.append((index, self.actors[index].play.remote(run, played, self.version, [self.weights])))
        self.next_actor = (self.next_actor + len(parts)) % len(self.actors)
        self.pending[key] = (self.version, futures)

    def send_weights(self, version: int, weights: dict[str, torch.Tensor]) -> None:
        """Put version ``version``'s weights in the object store, once; later requests carry it."""
        self.version, self.weights = version, self.ray.put(weights)

    def receive(self, key: RequestKey) -> Delivery:
        """Block until every part of ``key`` is played; the merged delivery."""
        ray = self.ray
        version, futures = self.pending.pop(key)
        try:
            outputs = ray.get([future for _, future in futures])
        except ray.exceptions.RayTaskError as error:
            raise RolloutWorkerError(f"a rollout actor failed on the rollout of {describe_key(key)}:\n{error}") from error
        except ray.exceptions.RayError as error:
            raise RolloutWorkerError(
                f"a rollout actor died more than {MAX_RESTARTS} time(s) (max_restarts) while the learner waited for the "
                f"rollout of {describe_key(key)}: {error}"
            ) from error
        for (index, _), (_, _, pid) in zip(futures, outputs):
            if pid != self.pids[index]:
                self.restarts += 1
                logger.warning("Rollout actor %d was restarted (pid %d, before %d); its requests were replayed", index, pid, self.pids[index])
                self.pids[index] = pid
        timings = {name: sum(output[1][name] for output in outputs) for name in outputs[0][1]}
        return Delivery(version, merge_results([output[0] for output in outputs]), timings)

    def close(self) -> None:
        """Kill the actors (no restart) and shut Ray down if this run started it."""
        ray = getattr(self, "ray", None)
        if ray is None:
            return
        for actor in self.actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # already gone
                pass
        self.actors, self.pending, self.weights, self.policy_blob = [], {}, None, None
        if self.started_ray and ray.is_initialized():
            ray.shutdown()
        self.ray = None
        logger.info("Rollout actors stopped%s", f" ({self.restarts} restart(s))" if self.restarts else "")

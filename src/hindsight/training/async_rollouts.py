"""Where the RL loop's rollouts come from: the synchronous producer (the learner plays them
itself) or the asynchronous one (our reading of EvoCUA-1.5; docs/fidelity.md, "The schedulers"):
a rollout worker process generates the rollouts of the next updates while the learner trains.

``train_rl`` asks the asynchronous producer (settings ``training.rl.schedulers.async_rollouts``,
``training.scheduler_settings.AsyncSettings``) for the batch of each update (``next_batch``), the proximal log-probs of
its samples (``proximal_logprobs``) and tells it when a new policy version exists
(``publish``); the synchronous loop plays its rollouts in-line
(``training.update_batch.collect_update_batch``).
Versions count updates: the starting policy of update ``u`` is version ``u``.

Asynchronous, with ``max_staleness = k``:

- the worker (``training.rollout_worker``: its own process, its own torch thread budget,
  the environments) plays the rollouts of update ``u`` with the newest weights it holds, in
  mini-groups (``training.async_batches``: ``mini_groups`` whole groups per message); with
  ``engine: ray``, ``workers`` Ray actors play them instead (``training.ray_rollouts``: each
  request divided among them, the weights through the object store, the version of a
  request fixed when it is issued, a killed actor restarted and its requests replayed);
- the learner asks for the rollouts of update ``u`` only once version ``u - k`` is
  published, through the same FIFO as the weights, so every sample's staleness (learner
  version minus the version that generated it) is at most ``k``: generation is held back,
  no late sample is ever dropped (discarding starves the slow, hard tasks);
- the learner draws the tasks itself when it issues the request (our reading: simpler than
  shipping the pass rates to the worker, and deterministic given the estimates), with the
  run's task draw (uniform, STEPO's band, the curriculum) and its pass rates of that moment:
  those hold every update before ``u - k``, so the draw reads estimates at most ``k``
  versions old (with k = 0 exactly the synchronous loop's);
- STEPO's zero-variance filter runs in the learner on each round once its mini-groups are
  in; a refill round is a new request of mini-groups for the same update, drawn from the
  current estimates and played with the learner's current version (the worker plays the
  waiting request with the smallest key first, so it goes ahead of later updates);
- k = 0 is lock-step: the worker plays with exactly the learner's weights; with one message
  per round (``mini_groups: 0``) the results equal the synchronous loop's, with every
  task draw and filter (same seeds, CPU, same thread count);
- the update is decoupled PPO (``algorithms.decoupled_ppo_loss``): the behaviour log-probs
  recorded at sampling time, the proximal log-probs recomputed by the learner (its version
  before the update) for the stale samples; a fresh sample's behaviour log-probs are its
  proximal ones; the weight pi_prox / pi_behav is capped at ``behaviour_weight_cap``.

A mini-group is played with one version (weights are loaded between mini-groups, not
mid-episode); ``async/staleness_mean`` and ``async/staleness_max`` are over every row played
for the update, ``async/mini_groups_per_update`` counts its messages (refills included).
``async/learner_wait_seconds`` is the time the learner blocked on them;
``async/worker_wait_seconds`` and ``async/worker_rollout_seconds`` the worker's idle and
playing time summed over them.

With k >= 1 and the process engine a run is not bit-reproducible: which version plays a
rollout depends on timing (bounded by k either way); the Ray engine fixes it at request time,
so a run with a given number of actors is. A resumed run starts a fresh worker from the checkpoint's weights;
rollouts played ahead but not yet trained on when the run was killed are played again (their
tasks drawn anew, from the checkpoint's pass rates).

A worker that dies or raises surfaces in the learner as ``RolloutWorkerError`` (with the
worker's traceback); leaving the ``with`` block (normally, on an exception or on
KeyboardInterrupt) stops the worker: asked first, then terminated, then killed.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd
import torch

from hindsight.policy.encoding import StepSample
from hindsight.rollout.curriculum import TaskDraw
from hindsight.rollout.pass_rates import PassRates
from hindsight.rollout.engine import RolloutConfig
from hindsight.rollout.tasks import TaskRef
from hindsight.training.async_batches import Delivery, UpdatePlan, assemble_batch, chunk_seed, chunk_tasks, round_table, staleness
from hindsight.training.batch import RolloutBatch
from hindsight.training.distillation import response_logprobs
from hindsight.training.rollout_worker import ProcessWorker, RolloutWorkerError, trainable_weights
from hindsight.training.scheduler_settings import AsyncSettings
from hindsight.training.update_batch import GroupFilter

logger = logging.getLogger(__name__)




__all__ = ["AsyncRollouts", "RolloutWorkerError", "SyncRollouts"]


class SyncRollouts:
    """The synchronous loop: the learner plays update ``u``'s rollout itself with version ``u``
    (``training.update_batch.collect_update_batch``); nothing to run ahead, nothing stale."""

    behaviour_weight_cap = None

    def __enter__(self) -> "SyncRollouts":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def proximal_logprobs(self, table: pd.DataFrame, samples, old_logp, update: int) -> None:
        """None: every sample is fresh, plain PPO."""
        return None

    def publish(self, version: int) -> None:
        """Nothing to send: the learner's policy is the actor."""


class AsyncRollouts:
    """Rollout workers generating up to ``max_staleness`` versions ahead, in mini-groups,
    from tasks the learner draws: one worker process (``engine: process``) or ``workers`` Ray
    actors (``engine: ray``, ``training.ray_rollouts``)."""

    def __init__(
        self, settings: AsyncSettings, policy, env_factory: Callable, pool: Sequence[TaskRef], rates: PassRates, tasks: TaskDraw,
        groups: GroupFilter, rollout_config: RolloutConfig, tasks_per_update: int, seed: int, start_update: int, end_update: int,
        *, group_size: int, batch_size: int, token_budget: int | None,
    ):
        self.settings = settings
        self.behaviour_weight_cap = settings.behaviour_weight_cap
        """The cap of pi_prox / pi_behav the update applies to this producer's batches."""
        self.policy, self.env_factory, self.pool, self.rates = policy, env_factory, pool, rates
        self.tasks, self.groups = tasks, groups
        self.rollout_config, self.tasks_per_update, self.seed = rollout_config, tasks_per_update, seed
        self.group_size = group_size
        """Rollouts per task (the run's ``group_size``)."""
        self.batch_size, self.token_budget = batch_size, token_budget
        """The proximal log-probs' scoring sizes (the run's ``mini_batch_size`` and ``micro_batch_tokens``)."""
        self.start_update, self.end_update = start_update, end_update
        self.requested = start_update  # the next update whose rollouts are not yet asked for
        self.plans: dict[int, UpdatePlan] = {}
        self.workers = None

    def __enter__(self) -> "AsyncRollouts":
        settings = self.settings
        if settings.engine == "ray":
            from hindsight.training.ray_rollouts import RayWorkers  # Ray is imported only for this engine

            self.workers = RayWorkers(settings)
        else:
            self.workers = ProcessWorker(settings.worker_threads)
        try:
            self.workers.start(
                self.policy, self.start_update, self.env_factory,
                f"max staleness {settings.max_staleness}, mini-groups {settings.mini_groups}",
            )
            self._request_up_to(self.start_update + settings.max_staleness)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _request_up_to(self, last: int) -> None:
        """Draw and ask for round 0 of every update up to ``last`` (inclusive) not asked yet."""
        while self.requested <= min(last, self.end_update - 1):
            plan = self.plans[self.requested] = UpdatePlan()
            plan.draw_metrics = self._request_round(self.requested, 0, self.tasks_per_update)
            self.requested += 1

    def _request_round(self, update: int, round_index: int, count: int) -> dict[str, float] | None:
        """Draw ``count`` tasks for a rollout round of ``update`` from the current pass rates
        and ask for them in mini-groups; the draw's metrics (None: nothing left to draw)."""
        plan = self.plans[update]
        drawn, metrics = self.tasks.draw(
            self.pool, self.rates, count, self.seed, update, round_index=round_index, exclude=plan.played
        )
        if not drawn:
            return None
        keys = []
        for chunk, tasks in enumerate(chunk_tasks(drawn, self.settings.mini_groups)):
            key = (update, round_index, chunk)
            settings = dataclasses.replace(
                self.rollout_config, group_size=self.group_size, seed=chunk_seed(self.seed, update, round_index, chunk)
            )
            self.workers.send_rollout(key, tasks, settings)
            keys.append(key)
        plan.rounds.append(keys)
        plan.played |= {task.group_id for task in drawn}
        return metrics

    def next_batch(self, update: int) -> RolloutBatch:
        """Block until ``update``'s mini-groups are in (refill rounds of the group filter
        requested as needed); the assembled batch with the ``async/`` metrics."""
        started = time.perf_counter()
        plan, wanted = self.plans[update], self.tasks_per_update
        deliveries: list[Delivery] = []
        kept: list[str] = []
        dropped = 0
        for round_index in range(1 + self.groups.extra_rounds):
            if round_index and self._request_round(update, round_index, wanted - len(kept)) is None:
                break
            arrived = [self.workers.receive(key) for key in plan.rounds[round_index]]
            deliveries += arrived
            new, constant = self.groups.keep(round_table(arrived), wanted - len(kept))
            kept, dropped = kept + new, dropped + constant
            if len(kept) >= wanted:
                break
        del self.plans[update]
        batch = assemble_batch(update, deliveries, kept, dropped, len(plan.rounds), self.groups, plan.draw_metrics)
        behind = staleness(update, deliveries)
        if len(behind) and (behind.max() > self.settings.max_staleness or behind.min() < 0):
            raise RolloutWorkerError(
                f"update {update}: samples of policy versions {sorted(set((update - behind).tolist()))} break the "
                f"staleness bound {self.settings.max_staleness}"
            )
        batch.metrics.update({
            "async/staleness_mean": float(behind.mean()) if len(behind) else 0.0,
            "async/staleness_max": float(behind.max()) if len(behind) else 0.0,
            "async/learner_wait_seconds": time.perf_counter() - started,
            "async/worker_wait_seconds": sum(d.timings["worker_wait_seconds"] for d in deliveries),
            "async/worker_rollout_seconds": sum(d.timings["worker_rollout_seconds"] for d in deliveries),
        })
        return batch

    def proximal_logprobs(
        self, table: pd.DataFrame, samples: Sequence[StepSample], old_logp: Sequence[torch.Tensor], update: int
    ) -> list[torch.Tensor]:
        """Per sample, the learner's (version ``update``) log-probs of its response: the
        recorded behaviour ones where the sample is fresh, recomputed where it is stale."""
        stale = [i for i, version in enumerate(table["policy_version"].tolist()) if version != update]
        proximal = list(old_logp)
        if stale:
            recomputed = response_logprobs(
                self.policy.model, [samples[i] for i in stale], self.batch_size,
                self.policy.tokenizer.pad_token_id, token_budget=self.token_budget,
            )
            for i, logp in zip(stale, recomputed):
                proximal[i] = logp
        return proximal

    def publish(self, version: int) -> None:
        """Send version ``version``'s weights, then the requests it unlocks."""
        self.workers.send_weights(version, trainable_weights(self.policy.model))
        self._request_up_to(version + self.settings.max_staleness)

    def close(self) -> None:
        """Stop the workers (``ProcessWorker.close``, ``RayWorkers.close``)."""
        if self.workers is not None:
            workers, self.workers = self.workers, None
            workers.close()

"""The schedulers of the core loop: the pieces chosen once from their settings
(``Schedule.from_settings``, given the block ``training.rl.schedulers``:
``training.scheduler_settings.SchedulerSettings``).

Each piece has one job and one interface; the loop (``training.loop``) and the update
(``training.update``) call them and read none of their settings. Every scheduler is off
by default: the plain loop draws uniformly, keeps every group, weighs samples equally and
shuffles them, and plays its rollouts itself.

| piece | interface | choices (settings under ``training.rl.schedulers``) |
|---|---|---|
| ``tasks`` | ``draw``, ``summary`` | uniform; STEPO's pass-rate band (``stepo.pass_rate_band``); the curriculum (``curriculum.enabled``) |
| ``groups`` | ``keep``, ``metrics``, ``extra_rounds`` | every group; STEPO's zero-variance filter with refill (``stepo.filter_zero_variance``) |
| ``weights`` | ``advantages``, ``check`` | none (the method's advantage); STEPO's balance: statistics over episodes, then ``1/T_i`` (``stepo.step_weights``) |
| ``minibatches`` | ``split``, ``metrics`` | shuffled; ODYSSE's whole episodes (``odysse.episode_minibatches``) |
| ``objective`` | ``check``, ``measure`` | token-level PPO (None); ODYSSE's episode-level ESPO (``odysse.objective: espo``) |
| ``producer`` | ``next_batch`` (asynchronous), ``proximal_logprobs``, ``publish`` | synchronous; a worker process ahead of the learner (``async_rollouts.enabled``) |
| ``replay`` | ``replay`` | none; the curriculum's positive replay of hard successes (``curriculum.positive_replay``) |
| ``correction`` | ``apply`` | decoupled PPO against an inexact rollout backend (``backend_correction.weight_cap``) |

The pass-rate estimates the pieces read come with the schedule (``rates``, ``pass_rates.smoothing``);
the loop keeps them up to date and hands them to the pieces.

They compose, with these exceptions (refused when the settings are read,
``SchedulerSettings``, or before the first rollout, ``Schedule.check``): STEPO's balance and
a method with a step-level advantage term (GiGPO, EMPO); the band and the curriculum both
choose the tasks; under ``torchrun`` the filter would keep different groups on each rank and
asynchronous rollouts would need one worker per learner; ESPO (``training.espo_update``)
needs the episodic mini-batches and refuses ``torchrun``, asynchronous rollouts, the
positive replay and token-level advantages (OPID). Asynchronous rollouts take the task draw
and the group filter along: the learner draws each request's tasks from pass rates at most
``max_staleness`` versions old and asks the worker for refill rounds
(``training.async_rollouts``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindsight.policy import Policy
from hindsight.rollout.curriculum import TaskDraw, task_draw
from hindsight.rollout.pass_rates import PassRates
from hindsight.training.async_rollouts import AsyncRollouts, SyncRollouts
from hindsight.training.backend_correction import BackendCorrection
from hindsight.training.espo_update import EspoObjective, episode_objective
from hindsight.training.method import Method
from hindsight.training.minibatches import MinibatchOrder
from hindsight.training.positive_replay import PositiveReplay
from hindsight.training.scheduler_settings import AsyncSettings, SchedulerSettings
from hindsight.training.stepo import GroupFilter, SampleWeights, group_filter, sample_weights




@dataclass
class Schedule:
    """The loop's schedulers (module docstring)."""

    tasks: TaskDraw
    groups: GroupFilter
    weights: SampleWeights
    minibatches: MinibatchOrder
    objective: EspoObjective | None = None
    """The update's policy term: None for token-level PPO, or ESPO (``training.espo_update``)."""
    replay: PositiveReplay | None = None
    """The curriculum's positive replay of hard successes (``training.positive_replay``), when on."""
    correction: BackendCorrection = field(default_factory=BackendCorrection)
    """The correction for an inexact rollout backend (``training.backend_correction``)."""
    asynchronous: AsyncSettings | None = None
    """Rollouts from a worker process with these settings (``training.async_rollouts``);
    None: played in-line."""
    rates: PassRates = field(default_factory=PassRates)
    """The per-task pass-rate estimates the pieces read (``pass_rates.smoothing``), fresh: the
    loop keeps them up to date and loads a resumed run's into them (``training.loop.start_loop``)."""

    @classmethod
    def from_settings(cls, settings: SchedulerSettings) -> "Schedule":
        """The pieces ``settings`` (the run's ``training.rl.schedulers``) asks for."""
        curriculum = settings.curriculum
        replay = curriculum.enabled and curriculum.positive_replay
        return cls(
            groups=group_filter(settings.stepo),
            weights=sample_weights(settings.stepo),
            minibatches=MinibatchOrder(settings.odysse.episode_minibatches),
            objective=episode_objective(settings.odysse),
            replay=PositiveReplay(curriculum.hard_threshold, curriculum.replay_weight_cap) if replay else None,
            correction=BackendCorrection(settings.backend_correction.weight_cap),
            asynchronous=settings.async_rollouts if settings.async_rollouts.enabled else None,
            rates=PassRates(settings.pass_rates.smoothing),
            tasks=task_draw(curriculum, settings.stepo.pass_rate_band),
        )

    def check(self, method: Method, *, parallel: bool) -> None:
        """Refuse what cannot run under ``torchrun`` (``parallel``) or with ``method``."""
        self.weights.check(method)
        if self.objective is not None:
            self.objective.check(method, parallel=parallel)
        if parallel and self.asynchronous is not None:
            raise ValueError("training.rl.schedulers.async_rollouts is not supported under torchrun (one rollout worker per learner)")
        if parallel and not self.groups.shardable:
            raise ValueError(
                "training.rl.schedulers.stepo.filter_zero_variance is not supported under torchrun (ranks would keep different groups)"
            )

    def producer(
        self, policy: Policy, env_factory, pool, rates: PassRates, rollout_config, tasks_per_update: int, seed: int,
        start_update: int, end_update: int, *, group_size: int, batch_size: int, token_budget: int | None,
    ):
        """Who plays the rollouts (use it as a context manager); the asynchronous one draws
        ``tasks_per_update`` tasks per update with this schedule's task draw from ``rates``,
        keeps this schedule's groups and scores proximal log-probs ``batch_size`` samples and
        at most ``token_budget`` padded tokens per pass."""
        if self.asynchronous is not None:
            return AsyncRollouts(
                self.asynchronous, policy, env_factory, pool, rates, self.tasks, self.groups, rollout_config, tasks_per_update,
                seed, start_update, end_update, group_size=group_size, batch_size=batch_size, token_budget=token_budget,
            )
        return SyncRollouts()

    def describe(self) -> str:
        """One line for the log: which piece is which."""
        producer = "asynchronous" if self.asynchronous is not None else "synchronous"
        return (
            f"tasks={self.tasks.name}, groups={self.groups.name}, weights={self.weights.name}, "
            f"minibatches={self.minibatches.name}, rollouts={producer}"
        )

"""The schedulers of the core loop, chosen once from the settings (``Schedule.from_settings``).

Each is a piece with one job and one interface; the loop calls them. The loop itself
(``training.rl``) still reads a few such settings, in two places: the curriculum's positive
replay (``curriculum``, ``curriculum_positive_replay``: ``replay_successes``) and the correction
for an inexact rollout backend (``sampler_weight_cap``, passed on as
``async_behaviour_weight_cap``: ``correct_for_sampler``).

| piece | interface | choices (settings of ``training.rl``) |
|---|---|---|
| ``tasks`` | ``draw``, ``summary`` | uniform; STEPO's pass-rate band (``stepo_pass_rate_band``); the curriculum (``curriculum``) |
| ``groups`` | ``keep``, ``metrics``, ``extra_rounds`` | every group; STEPO's zero-variance filter with refill (``stepo_filter_zero_variance``) |
| ``weights`` | ``advantages``, ``check`` | none (the method's advantage); STEPO's balance: statistics over episodes, then ``1/T_i`` (``stepo_step_weights``) |
| ``minibatches`` | ``split``, ``metrics`` | shuffled; ODYSSE's whole episodes (``odysse_episode_minibatches``) |
| ``producer`` | ``next_batch`` (asynchronous), ``proximal_logprobs``, ``publish`` | synchronous; a worker process ahead of the learner (``async_rollouts``) |

They compose, with these exceptions (refused when the settings are read, ``RLConfig``, or
before the first rollout, ``Schedule.check``): STEPO's balance and a method with a
step-level advantage term (GiGPO, EMPO);
the band and the curriculum both choose the tasks; under ``torchrun`` the filter would keep
different groups on each rank and asynchronous rollouts would need one worker per learner;
ODYSSE's episode-level objective (``odysse_objective: espo``, ``training.espo_update``) needs
the episodic mini-batches and refuses ``torchrun`` and token-level advantages (OPID).
Asynchronous rollouts take the task draw and the group filter along: the learner draws each
request's tasks from pass rates at most ``async_max_staleness`` versions old and asks the
worker for refill rounds (``training.async_rollouts``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.policy import Policy
from hindsight.rollout.curriculum import PassRates, TaskDraw, task_draw
from hindsight.training.async_rollouts import AsyncRollouts, SyncRollouts
from hindsight.training.espo_update import check_espo
from hindsight.training.method import Method
from hindsight.training.minibatches import MinibatchOrder
from hindsight.training.rl_config import RLConfig
from hindsight.training.stepo import GroupFilter, SampleWeights, group_filter, sample_weights


@dataclass
class Schedule:
    """The loop's schedulers (module docstring)."""

    tasks: TaskDraw
    groups: GroupFilter
    weights: SampleWeights
    minibatches: MinibatchOrder
    asynchronous: bool = False
    """Rollouts from a worker process (``training.async_rollouts``) instead of in-line."""
    objective: str = "token"
    """ODYSSE's policy loss (``odysse_objective``): token, or espo (``training.espo_update``)."""

    @classmethod
    def from_settings(cls, config: RLConfig) -> "Schedule":
        """The pieces ``config`` asks for."""
        return cls(
            tasks=task_draw(config),
            groups=group_filter(config),
            weights=sample_weights(config),
            minibatches=MinibatchOrder(config.odysse_episode_minibatches),
            asynchronous=config.async_rollouts,
            objective=config.odysse_objective,
        )

    def check(self, method: Method, *, parallel: bool) -> None:
        """Refuse what cannot run under ``torchrun`` (``parallel``) or with ``method``."""
        self.weights.check(method)
        check_espo(self.objective, method, parallel=parallel)
        if parallel and self.asynchronous:
            raise ValueError("training.rl.async_rollouts is not supported under torchrun (one rollout worker per learner)")
        if parallel and not self.groups.shardable:
            raise ValueError("training.rl.stepo_filter_zero_variance is not supported under torchrun (ranks would keep different groups)")

    def producer(
        self, policy: Policy, env_factory, pool, rates: PassRates, rollout_config, config: RLConfig, seed: int,
        start_update: int, end_update: int,
    ):
        """Who plays the rollouts (use it as a context manager); the asynchronous one draws
        with this schedule's task draw from ``rates`` and keeps this schedule's groups."""
        if self.asynchronous:
            return AsyncRollouts(
                policy, env_factory, pool, rates, self.tasks, self.groups, rollout_config, config, seed, start_update, end_update
            )
        return SyncRollouts()

    def describe(self) -> str:
        """One line for the log: which piece is which."""
        producer = "asynchronous" if self.asynchronous else "synchronous"
        return (
            f"tasks={self.tasks.name}, groups={self.groups.name}, weights={self.weights.name}, "
            f"minibatches={self.minibatches.name}, rollouts={producer}"
        )

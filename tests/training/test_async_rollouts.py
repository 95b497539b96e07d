"""Asynchronous rollouts (a rollout worker process, ``training.async_rollouts``) on the real
twc game and the tiny behaviour-cloned policy: with bound 0 the run equals the synchronous
loop exactly (metric history and final weights; CPU, same seeds, one thread each); with
bound 1 the worker runs ahead and no sample is ever more than one version stale."""

from __future__ import annotations

import copy
import multiprocessing

import pandas as pd
import pytest
import torch

from hindsight.envs import make_env
from hindsight.methods import MethodContext, build_method
from hindsight.methods.run import frozen_copy
from hindsight.rollout.engine import RolloutConfig
from hindsight.policy.generation import SamplingConfig
from hindsight.training.rl import train_rl
from hindsight.training.rl_config import RLConfig

pytestmark = pytest.mark.slow  # a multi-process or whole-grid test: `-m slow` (CI runs it)

SKILL_BANK = {"twc": "Take each object you see, then put it in its usual place before looking around again."}
WALL_CLOCK = ("charts/update_seconds",)


def rl_config(updates: int = 2, **asynchronous) -> RLConfig:
    """SEED on fixed skills; ``asynchronous``: keys of ``schedulers.async_rollouts``."""
    return RLConfig(
        algorithm="seed", updates=updates, tasks_per_update=2, group_size=2, learning_rate=1e-3, ppo_epochs=2,
        mini_batch_size=8, methods={"seed": {"skill_source": "fixed_bank"}}, eval_every=0,
        schedulers={"async_rollouts": {"worker_threads": 1, **asynchronous}},
    )


def run(policy, tasks, config: RLConfig, **kwargs):
    rollout = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=768), max_parallel=8, progress=False)
    return train_rl(
        copy.deepcopy(policy), frozen_copy(policy.model), tasks, make_env, rollout, config,
        build_method(config, MethodContext(skill_bank=SKILL_BANK)), seed=3, **kwargs,
    )


@pytest.fixture(scope="module")
def synchronous(warm_policy, twc_tasks):
    return run(warm_policy, twc_tasks, rl_config())


@pytest.fixture(scope="module")
def lock_step(warm_policy, twc_tasks):
    return run(warm_policy, twc_tasks, rl_config(enabled=True, max_staleness=0))


@pytest.fixture(scope="module")
def one_ahead(warm_policy, twc_tasks):
    return run(warm_policy, twc_tasks, rl_config(updates=3, enabled=True, max_staleness=1))


def test_bound_zero_equals_the_synchronous_loop(synchronous, lock_step):
    assert not multiprocessing.active_children()  # the worker was stopped
    history = lock_step.history
    assert history["update"].tolist() == [1, 2]
    assert (history["async/staleness_max"] == 0).all() and (history["async/staleness_mean"] == 0).all()
    assert (history["async/learner_wait_seconds"] >= 0).all() and (history["async/worker_wait_seconds"] >= 0).all()
    shared = [c for c in synchronous.history if c not in WALL_CLOCK]
    assert not [c for c in shared if c not in history], "the async run lost metrics of the synchronous one"
    assert (synchronous.history["rollout/success_rate"] > 0).any() and (synchronous.history["losses/ppo"] != 0).any()
    pd.testing.assert_frame_equal(history[shared], synchronous.history[shared], check_exact=True)
    pd.testing.assert_frame_equal(lock_step.last_rollout, synchronous.last_rollout, check_exact=True)
    expected, actual = synchronous.policy.model.state_dict(), lock_step.policy.model.state_dict()
    for name, tensor in expected.items():
        assert torch.equal(tensor, actual[name]), f"weights differ from the synchronous loop: {name}"


def test_bound_one_runs_ahead_within_the_bound(one_ahead):
    history = one_ahead.history
    assert history["update"].tolist() == [1, 2, 3]
    assert (history["async/staleness_max"] <= 1).all() and (history["async/staleness_mean"] <= 1).all()
    assert history["async/staleness_max"].iloc[0] == 0  # the first rollout is played with the start policy
    # update 2's rollout is asked for at the start and played as soon as update 1's is delivered,
    # long before the learner has trained update 1: version 0 plays it
    assert history["async/staleness_max"].iloc[1] == 1
    table = one_ahead.last_rollout
    assert 3 - 1 - table["policy_version"].max() <= 1 and table["policy_version"].max() <= 2
    stale = history[history["async/staleness_max"] > 0]
    # decoupled PPO: the stale samples' behaviour log-probs differ from the learner's proximal ones
    assert stale["ppo/behaviour_weight_mean"].notna().all() and (stale["ppo/behaviour_weight_mean"] != 1.0).all()
    assert history["losses/ppo"].notna().all() and (history["faults/skipped_updates"] == 0).all()


def test_bound_one_trains_every_parameter(warm_policy, one_ahead):
    before = dict(warm_policy.model.named_parameters())
    after = dict(one_ahead.policy.model.named_parameters())
    unchanged = [name for name, p in after.items() if p.requires_grad and torch.equal(p, before[name])]
    assert not unchanged, unchanged

"""A JVM killed or hung under a rollout: the episodes on it are replayed from their start
on a fresh JVM, the rollout completes with every planned episode and the faults counted;
a JVM that keeps dying stops the run naming the environment and the tries (real JVMs,
real games; each test has its own JVM).

TextWorldExpress is driven by the batched engine with the tiny policy (the path training
uses); ScienceWorld by the random agent. Kills are real ``SIGKILL``s, hangs real
``SIGSTOP``s (or a Java call that sleeps), made at a fixed turn so the outcome is exact.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import signal
import threading
import time

import matplotlib.pyplot as plt
import pytest
from scienceworld.constants import JAR_PATH as SCIENCEWORLD_JAR
from textworld_express.constants import JAR_PATH as TWX_JAR

from hindsight.policy.backends import TorchBackend
from hindsight.config import EnvironmentConfig
from hindsight.envs import (
    EnvironmentConfigError,
    EnvironmentCrashedError,
    EnvironmentSpec,
    EnvironmentTimeoutError,
    make_env,
)
from hindsight.envs.java_backend import JavaBackend
from hindsight.envs.scienceworld import ScienceWorldEnvironment
from hindsight.envs.textworldexpress import TextWorldExpressEnvironment
from hindsight.evaluation.heldout import MISSING_ATTR, HeldoutConfig, HeldoutPlay, evaluate_agents, heldout_tasks
from hindsight.pipelines.evaluation.nodes import report_evaluation
from hindsight.rollout import EnvPool, RolloutConfig, make_tasks, planned_episode_ids, run_random_agent, run_rollouts
from hindsight.rollout.faults import ENV_CRASH, STEP_TIMEOUT
from hindsight.rollout.live_episode import Episode
from hindsight.rollout.stats import rollout_metrics

from faulty_env import HangsOnOneTask
from hindsight.policy.generation import SamplingConfig

GROUP = 2
CONFIG = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), group_size=GROUP, max_parallel=2, max_steps=6, seed=3, progress=False)


def wait_until_dead(backend: JavaBackend, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while backend.is_alive and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not backend.is_alive


@pytest.fixture()
def twx_backend():
    backend = JavaBackend(TWX_JAR, "TextWorldExpress")
    yield backend
    backend.kill()  # a stopped JVM would not answer a polite shutdown
    backend.close()


def on_turn(monkeypatch, turn: int, act) -> list[int]:
    """Run ``act()`` just before the engine's ``turn``-th batched generation (1-based)."""
    calls = []
    generate = TorchBackend.generate  # the engine's default backend

    def generate_and_act(self, *args, **kwargs):
        calls.append(len(calls) + 1)
        if len(calls) == turn:
            act()
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(TorchBackend, "generate", generate_and_act)
    return calls


def assert_complete_episodes(result) -> None:
    table = result.table
    for _, rows in table.groupby("episode_id"):
        assert rows["step"].tolist() == list(range(len(rows))) and rows["done"].iloc[-1]
    assert [(s.episode_id, s.step) for s in result.samples] == list(zip(table["episode_id"], table["step"]))


def test_a_jvm_killed_with_every_episode_live_loses_no_episode(tiny_policy, twc_tasks, twx_backend, monkeypatch):
    """6 episodes, all live at once on one JVM; SIGKILL by the JVM's pid before the 3rd turn:
    each of the 6 is replayed from its start on a new JVM, and the table holds all 6."""

    def kill():
        killed.append(twx_backend.pid)
        os.kill(twx_backend.pid, signal.SIGKILL)
        wait_until_dead(twx_backend)

    killed: list[int] = []
    on_turn(monkeypatch, 3, kill)
    config = dataclasses.replace(CONFIG, max_parallel=GROUP * len(twc_tasks))
    factory = lambda spec: TextWorldExpressEnvironment(spec, backend=twx_backend)  # noqa: E731
    result = run_rollouts(tiny_policy, factory, twc_tasks, config)

    planned = planned_episode_ids(twc_tasks, config)
    replayed = result.faults.replayed
    assert len(planned) == 6 and sorted(f.episode_id for f in replayed) == sorted(planned)
    assert {f.reason for f in replayed} == {ENV_CRASH} and {f.steps for f in replayed} == {2}
    assert all("JVM" in f.detail for f in replayed)
    assert result.faults.failed == []
    assert sorted(result.table["episode_id"].unique()) == sorted(planned)
    assert_complete_episodes(result)
    assert twx_backend.is_alive and twx_backend.pid != killed[0] and twx_backend.generation == 2
    assert result.stats["episode_replays"] == 6 and result.stats["env_restarts"] == 6
    metrics = rollout_metrics(result.table)
    assert metrics["faults/episode_replays"] == 6 and metrics["faults/failed_episodes"] == 0
    assert metrics["faults/failed_episode_rate"] == 0 and metrics["faults/step_timeouts"] == 0
    assert metrics["rollout/env_steps"] == len(result.table)


def test_a_hung_jvm_times_out_and_its_episodes_are_replayed(tiny_policy, twc_spec, twx_backend, monkeypatch):
    """SIGSTOP before the 3rd turn: the first live episode's step hangs, the watchdog kills
    the JVM after ``step_timeout_s`` ("step timeout"); the other live episode finds the JVM
    dead ("environment crashed"); both are replayed on a new JVM, and every episode plays."""
    spec = dataclasses.replace(twc_spec, step_timeout_s=2.0)
    tasks = make_tasks(spec, "train", [0, 1])
    stopped: list[int] = []

    def stop():
        stopped.append(twx_backend.pid)
        os.kill(twx_backend.pid, signal.SIGSTOP)

    on_turn(monkeypatch, 3, stop)
    factory = lambda spec: TextWorldExpressEnvironment(spec, backend=twx_backend)  # noqa: E731
    result = run_rollouts(tiny_policy, factory, tasks, CONFIG)

    planned = planned_episode_ids(tasks, CONFIG)
    reasons = {f.episode_id: f.reason for f in result.faults.replayed}
    assert reasons == {planned[0]: STEP_TIMEOUT, planned[1]: ENV_CRASH}
    timeout = result.faults.replayed[0]
    assert "longer than the step timeout (2 s)" in timeout.detail and str(stopped[0]) in timeout.detail
    assert sorted(result.table["episode_id"].unique()) == sorted(planned) and result.faults.failed == []
    assert_complete_episodes(result)
    assert twx_backend.timeouts == 1 and twx_backend.pid != stopped[0]
    metrics = rollout_metrics(result.table, result.faults.metrics())
    assert metrics["faults/step_timeouts"] == 1 and metrics["faults/episode_replays"] == 2
    assert metrics["faults/failed_episode_rate"] == 0


def test_an_idle_environment_of_a_dead_jvm_restarts_without_failing_an_episode(tiny_policy, twc_tasks, twx_backend):
    """A pool kept across rollouts (as the RL loop keeps it): the JVM dies between two
    rollouts; each pooled environment fails at reset, restarts, and its episode plays."""
    factory = lambda spec: TextWorldExpressEnvironment(spec, backend=twx_backend)  # noqa: E731
    with EnvPool(factory, max_size=2) as pool:
        run_rollouts(tiny_policy, None, twc_tasks[:1], CONFIG, env_pool=pool)
        twx_backend.kill()
        result = run_rollouts(tiny_policy, None, twc_tasks[:1], CONFIG, env_pool=pool)
    assert result.faults.failed == [] and result.faults.replayed == [] and result.stats["env_restarts"] == 2
    assert result.table["episode_id"].nunique() == GROUP
    assert_complete_episodes(result)


def test_a_jvm_that_keeps_dying_stops_the_rollout_naming_the_environment_and_the_tries(
    tiny_policy, twc_tasks, twx_backend, monkeypatch
):
    """The JVM is killed before every turn: each try of the first episode dies with it; after
    1 play + 2 replays the run stops, and the error says which environment and how many tries."""
    calls: list[int] = []
    generate = TorchBackend.generate

    def kill_and_generate(self, *args, **kwargs):
        calls.append(twx_backend.pid)
        twx_backend.kill()
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(TorchBackend, "generate", kill_and_generate)
    factory = lambda spec: TextWorldExpressEnvironment(spec, backend=twx_backend)  # noqa: E731
    config = dataclasses.replace(CONFIG, episode_replays=2)
    with pytest.raises(EnvironmentCrashedError) as raised:
        run_rollouts(tiny_policy, factory, twc_tasks[:1], config)
    message = str(raised.value)
    assert "The textworldexpress environment (game 'twc') keeps failing" in message
    assert "failed on all 3 tries (1 play + 2 replays, rollout.episode_replays)" in message
    assert len(set(calls)) == 3  # three JVMs, each killed


def test_a_hung_java_call_is_killed_at_its_timeout(twx_backend):
    generation = twx_backend.ensure_running()
    sleep = twx_backend.jvm.java.lang.Thread.sleep
    assert twx_backend.call(generation, sleep, 10, timeout_s=5.0) is None  # in time: no effect
    started = time.perf_counter()
    with pytest.raises(EnvironmentTimeoutError, match=r"longer than the step timeout \(0.3 s\)"):
        twx_backend.call(generation, sleep, 60_000, timeout_s=0.3)
    assert time.perf_counter() - started < 10.0
    assert not twx_backend.is_alive and twx_backend.timeouts == 1
    assert twx_backend.ensure_running() == generation + 1
    assert twx_backend.call(generation + 1, twx_backend.jvm.java.lang.Math.max, 3, 4, timeout_s=5.0) == 4


def test_py4j_object_releases_wait_for_a_guarded_call(twx_backend):
    """Dropping a Java object's proxy makes py4j send a blocking release: on a stopped JVM it
    must not hang where no watchdog looks; it is sent (and timed) in the next guarded call."""
    generation = twx_backend.ensure_running()
    held = [twx_backend.call(generation, twx_backend.jvm.java.util.ArrayList)]
    os.kill(twx_backend.pid, signal.SIGSTOP)

    def drop():
        held.clear()
        gc.collect()

    dropper = threading.Thread(target=drop, daemon=True)
    dropper.start()
    dropper.join(timeout=10)
    assert not dropper.is_alive() and not held
    with pytest.raises(EnvironmentTimeoutError):  # the call itself needs no JVM: the release does
        twx_backend.call(generation, lambda: None, timeout_s=0.3)
    assert twx_backend.timeouts == 1


def test_a_jvm_that_stopped_answering_is_replaced_on_restart(twc_spec, twx_backend):
    """A killed JVM can look alive for a moment while its port already refuses connections;
    here the process runs on with its py4j server shut down: ``restart`` must not reconnect
    to it but kill it and start a new one."""
    env = TextWorldExpressEnvironment(twc_spec, backend=twx_backend)
    env.reset(env.seeds("train", 1)[0], "train")
    old = twx_backend._process
    twx_backend._gateway.shutdown()  # the JVM's gateway server stops; the process lives
    with pytest.raises(EnvironmentCrashedError):
        env.step("look around")
    assert old.poll() is None and twx_backend.is_alive
    env.restart()
    assert twx_backend.pid != old.pid and twx_backend.generation == 2 and old.poll() is not None
    _, info = env.reset(env.seeds("train", 1)[0], "train")
    assert info["valid_actions"]


def test_the_step_timeout_is_configured_and_checked(twc_spec):
    specs = EnvironmentConfig(step_timeout_s=7.5).specs()
    assert {spec.step_timeout_s for spec in specs} == {7.5}
    assert EnvironmentConfig().step_timeout_s == EnvironmentSpec("x", "y").step_timeout_s == 60.0
    with pytest.raises(ValueError, match="environment.step_timeout_s must be positive"):
        EnvironmentConfig(step_timeout_s=0)
    with pytest.raises(EnvironmentConfigError, match="step_timeout_s must be a positive number"):
        make_env(dataclasses.replace(twc_spec, step_timeout_s=-1.0))


def test_scienceworld_a_killed_jvm_replays_one_random_agent_episode(monkeypatch):
    """ScienceWorld under the random agent: 3 episodes of 4 steps; SIGKILL before the 6th
    step (the second episode's second): that episode is replayed on a new JVM, all 3 play."""
    backend = JavaBackend(SCIENCEWORLD_JAR, "ScienceWorld")
    spec = EnvironmentSpec("scienceworld", "find-animal", {"simplification": "easy"}, max_steps=4)
    play, calls = Episode.play, []

    def play_after_kill(self, *args, **kwargs):
        calls.append(self.episode_id)
        if len(calls) == 6:
            os.kill(backend.pid, signal.SIGKILL)
            wait_until_dead(backend)
        return play(self, *args, **kwargs)

    monkeypatch.setattr(Episode, "play", play_after_kill)
    try:
        env = ScienceWorldEnvironment(spec, backend=backend)
        tasks = make_tasks(spec, "train", env.seeds("train", 3))
        env.close()
        result = run_random_agent(lambda s: ScienceWorldEnvironment(s, backend=backend), tasks, max_steps=4)
    finally:
        backend.close()
    [replayed] = result.faults.replayed
    assert replayed.reason == ENV_CRASH and replayed.steps == 1 and replayed.group_id == tasks[1].group_id
    assert result.faults.failed == []
    assert list(result.table["group_id"].unique()) == [task.group_id for task in tasks]
    for _, rows in result.table.groupby("episode_id"):
        assert rows["step"].tolist() == list(range(len(rows))) and rows["done"].iloc[-1]
    assert result.stats["episode_replays"] == 1 and result.stats["env_restarts"] == 1
    assert backend.generation == 2
    assert rollout_metrics(result.table)["faults/failed_episode_rate"] == 0


def test_the_heldout_report_says_how_many_planned_episodes_are_missing(tiny_policy, twc_spec, monkeypatch):
    """An episode given up after its tries (a hang every time) is not in the table; the
    report says so, with the count per agent and split, instead of a silently smaller n."""
    heldout = HeldoutConfig(play=HeldoutPlay(episodes_per_game=2, splits=["seen"], decodings={"greedy": {"temperature": 0.0}}))
    tasks = heldout_tasks([twc_spec], heldout)["seen"]
    monkeypatch.setattr(HangsOnOneTask, "seed", tasks[0].seed)
    config = RolloutConfig(max_steps=4, progress=False, episode_replays=1)
    episodes = evaluate_agents(tiny_policy, [twc_spec], HangsOnOneTask, config, heldout, policy_label="rl")
    assert episodes["episode_id"].nunique() == 1 and episodes.attrs[MISSING_ATTR] == {"rl-greedy/seen": 1}
    _, summary, _, text, figure = report_evaluation(episodes.iloc[0:0], episodes)
    plt.close(figure)
    assert "Missing: 1 planned episode(s) are not in this table" in text and "rl-greedy/seen 1" in text
    assert summary.loc[summary["task_type"] == "all", "episodes"].tolist() == [1]
    complete = evaluate_agents(tiny_policy, [twc_spec], make_env, config, heldout, policy_label="rl")
    assert MISSING_ATTR not in complete.attrs and "Missing" not in report_evaluation(complete.iloc[0:0], complete)[3]

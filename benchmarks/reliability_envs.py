"""Environment faults during rollouts, measured: JVM kills and hangs (docs/reliability.md).

Each trial plays a real rollout and injects one fault at a random moment (seeded), from
another thread, as the system would:

- TextWorldExpress kill: the batched engine (the path RL training uses; the "tiny" policy,
  its tokenizer trained on a few gold twc episodes) plays 4 twc tasks x 2 episodes, 4 live
  at once on one JVM; the JVM is SIGKILLed at a uniform moment of the rollout's first 60%
  (of the duration of an undisturbed rollout). Survived = ``run_rollouts`` returned, every
  episode in the table is complete (steps 0..n-1, the last one ``done``), the failed
  episodes plus the finished ones are the planned ones, and the JVM was replaced.
- TextWorldExpress hang: the same rollout with ``step_timeout_s`` = 2 s; the JVM is
  SIGSTOPped instead. Survived = as above, and exactly one step timeout was reported.
- ScienceWorld kill: the random agent plays 3 find-animal episodes of 6 steps; the JVM is
  SIGKILLed at a random moment.

Also measured: how long after its timeout a hung call returns (the watchdog's kill), how
long a killed environment takes to be ready again (``restart()``: a new JVM and the game
loaded), and what the watchdog costs a Java call. A kill that lands after the rollout ended
(it finished early) is drawn again.

Run from the project root (about a minute on 2 cores; ``measure()`` is what
``benchmarks/reliability.py`` prints):

    HINDSIGHT_TORCH_THREADS=1 python benchmarks/reliability_envs.py
"""

from __future__ import annotations

GROUP = "reliability"
REPRODUCES = ("docs/reliability.md#reliability",)
MEASURED = "about a minute on 2 cores (the docstring; CPU not named)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/reliability.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import dataclasses
import logging
import os
import random
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402
from scienceworld.constants import JAR_PATH as SCIENCEWORLD_JAR  # noqa: E402
from textworld_express.constants import JAR_PATH as TWX_JAR  # noqa: E402

from hindsight.data.expert import play_gold_episode  # noqa: E402
from hindsight.envs import EnvironmentSpec, EnvironmentTimeoutError  # noqa: E402
from hindsight.envs.java_backend import JavaBackend  # noqa: E402
from hindsight.envs.scienceworld import ScienceWorldEnvironment  # noqa: E402
from hindsight.envs.textworldexpress import TextWorldExpressEnvironment  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.prompts import episode_prompts  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout import RolloutConfig, make_tasks, run_random_agent, run_rollouts  # noqa: E402
from hindsight.policy.generation import SamplingConfig

TWC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=10)
FIND_ANIMAL = EnvironmentSpec("scienceworld", "find-animal", {"simplification": "easy"}, max_steps=6)
CONFIG = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), group_size=2, max_parallel=4, seed=0, progress=False)
HANG_TIMEOUT_S = 2.0


def _tiny_policy(backend: JavaBackend):
    """The "tiny" policy with a tokenizer trained on 4 gold twc episodes."""
    env = TextWorldExpressEnvironment(TWC, backend=backend)
    texts = []
    for seed in env.seeds("train", 4):
        rows = play_gold_episode(env, TWC, "train", seed)
        actions = [row["action"] for row in rows]
        prompts = episode_prompts(rows[0]["task"], [r["observation"] for r in rows], actions, [r["valid_actions"] for r in rows])
        texts += prompts + actions
    env.close()
    return build_policy("tiny", train_tokenizer(texts, vocab_size=600), seed=0, device="cpu")


def _complete(result, planned: int) -> bool:
    """Every episode in the table complete, and finished + failed = planned."""
    table = result.table
    for _, rows in table.groupby("episode_id"):
        if rows["step"].tolist() != list(range(len(rows))) or not rows["done"].iloc[-1]:
            return False
    failed = {f.episode_id for f in result.faults.failed}
    return not failed & set(table["episode_id"]) and table["episode_id"].nunique() + len(failed) == planned


def _fault_at(delay: float, backend: JavaBackend, sig: int, done: threading.Event) -> tuple[threading.Timer, list]:
    """A timer sending ``sig`` to ``backend``'s JVM after ``delay`` s unless ``done`` is set."""
    landed: list[float] = []

    def fire():
        if not done.is_set() and backend.is_alive:
            os.kill(backend.pid, sig)
            landed.append(time.perf_counter())

    timer = threading.Timer(delay, fire)
    timer.start()
    return timer, landed


def _rollout_trials(policy, backend, rng, trials: int, sig: int, baseline: float, spec: EnvironmentSpec) -> list[dict]:
    """``trials`` engine rollouts with one ``sig`` each; per trial: survived, failed count,
    failed rate, step timeouts."""
    tasks = make_tasks(spec, "train", [10, 11, 12, 13])
    planned = len(tasks) * CONFIG.group_size
    factory = lambda s: TextWorldExpressEnvironment(s, backend=backend)  # noqa: E731
    outcomes = []
    while len(outcomes) < trials:
        done, generation = threading.Event(), backend.generation
        timer, landed = _fault_at(rng.uniform(0.05, 0.6) * baseline, backend, sig, done)
        try:
            result = run_rollouts(policy, factory, tasks, dataclasses.replace(CONFIG, seed=len(outcomes)))
        except Exception as error:  # noqa: BLE001 - a rollout that did not survive is the figure
            logging.getLogger(__name__).warning("rollout did not survive: %s", error)
            result = None
        finally:
            done.set()
            timer.cancel()
        if landed and backend.generation == generation and result is not None and not result.faults.failed:
            backend.kill()  # the fault came after the rollout's last Java call: nothing could notice
            landed.clear()
        if not landed:
            continue  # the rollout ended before the fault: draw again
        survived = result is not None and _complete(result, planned) and backend.generation > generation
        if sig == signal.SIGSTOP:
            survived = survived and result.stats["step_timeouts"] == 1
        outcomes.append(
            {
                "survived": survived,
                "failed": len(result.faults.failed) if result else planned,
                "rate": result.stats["failed_episode_rate"] if result else 1.0,
            }
        )
    return outcomes


def _scienceworld_trials(rng, trials: int) -> list[bool]:
    backend = JavaBackend(SCIENCEWORLD_JAR, "ScienceWorld")
    survived = []
    try:
        env = ScienceWorldEnvironment(FIND_ANIMAL, backend=backend)
        tasks = make_tasks(FIND_ANIMAL, "train", env.seeds("train", 3))
        env.close()
        factory = lambda s: ScienceWorldEnvironment(s, backend=backend)  # noqa: E731
        started = time.perf_counter()
        run_random_agent(factory, tasks, seed=0)
        baseline = time.perf_counter() - started
        while len(survived) < trials:
            done, generation = threading.Event(), backend.generation
            timer, landed = _fault_at(rng.uniform(0.1, 0.7) * baseline, backend, signal.SIGKILL, done)
            try:
                result = run_random_agent(factory, tasks, seed=len(survived) + 1)
            except Exception:  # noqa: BLE001 - the figure counts it
                result = None
            finally:
                done.set()
                timer.cancel()
            if landed and backend.generation == generation and result is not None and not result.faults.failed:
                continue  # the kill came after the last Java call: draw again
            if landed:
                survived.append(result is not None and _complete(result, len(tasks)) and backend.generation > generation)
    finally:
        backend.close()
    return survived


def _restart_seconds(backend: JavaBackend, env, reset) -> float:
    """Kill the JVM and time ``env.restart()`` plus the next reset."""
    backend.kill()
    started = time.perf_counter()
    env.restart()
    reset()
    return time.perf_counter() - started


def _hang_overshoot_ms(backend: JavaBackend, repeats: int = 3) -> float:
    """Median time past the timeout at which a call to a stopped JVM returns."""
    overshoots = []
    for _ in range(repeats):
        generation = backend.ensure_running()
        nothing = backend.jvm.java.lang.Math.max
        os.kill(backend.pid, signal.SIGSTOP)
        started = time.perf_counter()
        try:
            backend.call(generation, nothing, 1, 2, timeout_s=0.5)
        except EnvironmentTimeoutError:
            overshoots.append((time.perf_counter() - started - 0.5) * 1000)
        finally:  # never leave a stopped JVM for the next round to reuse: its first call would block for good
            backend.kill()
    return statistics.median(overshoots)


def _call_cost_us(backend: JavaBackend, calls: int = 500, rounds: int = 6) -> tuple[float, float]:
    """Median cost of a trivial Java call without and with a deadline (rounds interleaved)."""
    generation = backend.ensure_running()
    function = backend.jvm.java.lang.Math.max
    costs: dict[float | None, list[float]] = {None: [], 60.0: []}
    for _ in range(rounds):
        for timeout in costs:
            started = time.perf_counter()
            for _ in range(calls):
                backend.call(generation, function, 1, 2, timeout_s=timeout)
            costs[timeout].append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(costs[None]), statistics.median(costs[60.0])


class _QuietPy4J(logging.Filter):
    """Drops py4j's tracebacks of failed commands (each kill makes a few, on the root logger)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name.startswith("py4j") or "while sending command" in record.getMessage())


def measure(kills: int = 3, hangs: int = 2, scienceworld_kills: int = 2, seed: int = 0) -> list[tuple[str, str]]:
    """Run the trials (module docstring) and return (figure name, value) pairs."""
    threads = int(os.environ.get("HINDSIGHT_TORCH_THREADS", "0") or 0)
    if threads:
        torch.set_num_threads(threads)
    quiet, loggers = _QuietPy4J(), [logging.getLogger(), logging.getLogger("py4j.java_gateway")]
    for logger in loggers:  # a filter sees only the records logged on its own logger
        logger.addFilter(quiet)
    try:
        return _measure(kills, hangs, scienceworld_kills, seed)
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)


def _measure(kills: int, hangs: int, scienceworld_kills: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    backend = JavaBackend(TWX_JAR, "TextWorldExpress")
    try:
        policy = _tiny_policy(backend)
        factory = lambda s: TextWorldExpressEnvironment(s, backend=backend)  # noqa: E731
        tasks = make_tasks(TWC, "train", [10, 11, 12, 13])
        started = time.perf_counter()
        run_rollouts(policy, factory, tasks, CONFIG)
        baseline = time.perf_counter() - started
        killed = _rollout_trials(policy, backend, rng, kills, signal.SIGKILL, baseline, TWC)
        hung = _rollout_trials(
            policy, backend, rng, hangs, signal.SIGSTOP, baseline, dataclasses.replace(TWC, step_timeout_s=HANG_TIMEOUT_S)
        )
        overshoot = _hang_overshoot_ms(backend)
        unarmed, armed = _call_cost_us(backend)
        env = TextWorldExpressEnvironment(TWC, backend=backend)
        twx_restart = statistics.median(_restart_seconds(backend, env, lambda: env.reset(10, "train")) for _ in range(3))
        env.close()
    finally:
        backend.kill()
        backend.close()
    sw_backend = JavaBackend(SCIENCEWORLD_JAR, "ScienceWorld")
    try:
        sw_env = ScienceWorldEnvironment(FIND_ANIMAL, backend=sw_backend)
        sw_seed = sw_env.seeds("train", 1)[0]
        sw_restart = statistics.median(
            _restart_seconds(sw_backend, sw_env, lambda: sw_env.reset(sw_seed, "train")) for _ in range(2)
        )
    finally:
        sw_backend.close()
    sw_survived = _scienceworld_trials(rng, scienceworld_kills)
    planned = 4 * CONFIG.group_size

    def fraction(outcomes) -> str:
        return f"{sum(o['survived'] for o in outcomes)}/{len(outcomes)}"

    return [
        ("TextWorldExpress JVM kills survived (engine, SIGKILL at a random moment)", f"{fraction(killed)} rollouts completed"),
        (
            "episodes failed per kill",
            f"{statistics.mean(o['failed'] for o in killed):.1f} of {planned} (those live on the JVM, at most {CONFIG.max_parallel})",
        ),
        ("failed-episode rate under one kill per rollout", f"{statistics.mean(o['rate'] for o in killed):.2f} (faults/failed_episode_rate)"),
        (f"TextWorldExpress hangs survived (SIGSTOP, step_timeout_s={HANG_TIMEOUT_S:g})", f"{fraction(hung)} rollouts completed"),
        ("failed-episode rate under one hang per rollout", f"{statistics.mean(o['rate'] for o in hung):.2f}"),
        ("hang detection: a call returns after its timeout", f"+{overshoot:.0f} ms (median; the watchdog kills the JVM)"),
        ("ScienceWorld JVM kills survived (random agent)", f"{sum(sw_survived)}/{len(sw_survived)} rollouts completed"),
        ("restart after a kill (new JVM + game ready)", f"TextWorldExpress {twx_restart:.2f} s, ScienceWorld {sw_restart:.2f} s (median)"),
        ("watchdog cost per Java call", f"{armed - unarmed:+.0f} us ({unarmed:.0f} us unarmed, {armed:.0f} us armed)"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=3, help="TextWorldExpress rollouts with a SIGKILL")
    parser.add_argument("--hangs", type=int, default=2, help="TextWorldExpress rollouts with a SIGSTOP")
    parser.add_argument("--scienceworld-kills", type=int, default=2, help="ScienceWorld random-agent runs with a SIGKILL")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault moments")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    for name, value in measure(args.kills, args.hangs, args.scienceworld_kills, args.seed):
        print(f"{name}: {value}")


if __name__ == "__main__":
    main()

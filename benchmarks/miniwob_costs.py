"""What the MiniWoB++ environment costs here, and how its gold solvers do.

Prints, on this machine (CPU model from /proc/cpuinfo):

- make: building ``MiniWobEnvironment`` plus its first ``reset`` (a browser start, a window,
  the task's page loaded from ``file://``), and a second environment's (a window in the
  running browser);
- reset, step (one ``click [ref]`` or ``type``), ``screenshot()``: medians over the gold
  episodes;
- memory: the proportional set size (PSS, shared pages divided among their users) of the
  browser's processes with 1 window and with ``--windows`` windows;
- each solved task's gold sequence over ``--seeds`` train seeds: wins, by ref and by
  coordinates (``solvers.by_coordinates``).

    python benchmarks/miniwob_costs.py [--seeds 20] [--windows 8]
"""

from __future__ import annotations

GROUP = "environments"
REPRODUCES = ("docs/gui.md#what-it-costs", "docs/gui.md#gold-solvers")
MEASURED = "run time not given; a 2-core AMD EPYC, load about 6, Chromium 156"
LAST_RUN = "by 2026-12-06 (git: the figure's lines in docs/gui.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import platform
import statistics
import time

from hindsight.envs import EnvironmentSpec, make_env
from hindsight.envs.miniwob.pool import browser_pool
from hindsight.envs.miniwob.solvers import SOLVERS, by_coordinates


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def browser_pss_mib() -> float:
    """PSS of every process of every live browser, in MiB."""
    total = 0
    for browser in browser_pool().browsers:
        for process in browser.processes.members():
            try:
                total += process.memory_full_info().pss
            except Exception:  # noqa: BLE001 - a process gone meanwhile
                pass
    return total / 2**20


def median_ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.0f} ms (n={len(values)})" if values else "-"


def play(env, seed: int, coordinates: bool, timings: dict) -> bool:
    started = time.perf_counter()
    env.reset(seed, "train")
    timings["reset"].append(time.perf_counter() - started)
    started = time.perf_counter()
    env.screenshot()
    timings["screenshot"].append(time.perf_counter() - started)
    actions = env.gold_actions()
    if coordinates:
        actions = by_coordinates(actions, env.state.elements)
    info = {"won": False}
    for action in actions:
        started = time.perf_counter()
        _, _, terminated, truncated, info = env.step(action)
        timings["step"].append(time.perf_counter() - started)
        if terminated or truncated:
            break
    return bool(info["won"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--windows", type=int, default=8)
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}, {len(__import__('os').sched_getaffinity(0))} cores available")

    started = time.perf_counter()
    first = make_env(EnvironmentSpec("miniwob", "click-button", max_steps=10))
    first.reset(0, "train")
    make_first = time.perf_counter() - started
    one_window = browser_pss_mib()
    started = time.perf_counter()
    second = make_env(EnvironmentSpec("miniwob", "enter-text", max_steps=10))
    second.reset(0, "train")
    make_second = time.perf_counter() - started
    extra = [make_env(EnvironmentSpec("miniwob", "click-test", max_steps=10)) for _ in range(max(args.windows - 2, 0))]
    for env in extra:
        env.reset(0, "train")
    many_windows = browser_pss_mib()
    for env in extra + [first, second]:
        env.close()
    print(f"make + first reset: {make_first:.2f} s (browser start), {make_second:.2f} s (a window in a running browser)")
    print(f"browser memory (PSS): {one_window:.0f} MiB with 1 window, {many_windows:.0f} MiB with {args.windows} windows "
          f"({(many_windows - one_window) / max(args.windows - 1, 1):.0f} MiB per extra window)")

    timings = {"reset": [], "step": [], "screenshot": []}
    print(f"\n| task | wins by ref | wins by coordinates | seconds |")
    print("|---|---|---|---|")
    for task in SOLVERS:
        env = make_env(EnvironmentSpec("miniwob", task, max_steps=10))
        started = time.perf_counter()
        seeds = env.seeds("train", args.seeds)
        by_ref = sum(play(env, seed, False, timings) for seed in seeds)
        by_xy = sum(play(env, seed, True, timings) for seed in seeds)
        print(f"| {task} | {by_ref}/{len(seeds)} | {by_xy}/{len(seeds)} | {time.perf_counter() - started:.1f} |")
        env.close()
    print(f"\nreset {median_ms(timings['reset'])}, step {median_ms(timings['step'])}, "
          f"screenshot {median_ms(timings['screenshot'])}")
    print(f"live browsers after close: {browser_pool().live_browsers}")


if __name__ == "__main__":
    main()

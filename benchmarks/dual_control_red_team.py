"""The dual-control domain against its red team: pass^1 per agent per fold (docs/dual_control.md).

Every agent of ``hindsight.envs.dual_control.red_team.RED_TEAM`` and of
``exploits.EXPLOITS``, and the gold sequence (``analysis.gold_actions``), plays the same
tasks through the Gymnasium id ``hindsight/dual-control-telecom-v0`` (20 steps; ``info``
without the score, ``gold_actions()`` refused): each agent sees only the observations.
Tasks per fold: ``--tasks`` (default 200) seeds from position 500 of the train fold (the
"seen" window: clause-counting learns from train positions 0-399, and the expert seeds are
0-399), and from position 0 of the dev and test folds. The environment is deterministic,
so pass^k = pass^1; the interval is Wilson's 95% over tasks. Also printed: the test fold
broken down by held-out component (``--breakdown``).

    python benchmarks/dual_control_red_team.py [--tasks 200] [--agents a,b] [--breakdown]

About a minute on one core for the default 200 tasks per fold.
"""

from __future__ import annotations

GROUP = "environments"
REPRODUCES = ("docs/dual_control.md#the-red-team-what-is-held-by-which-agents",)
MEASURED = "about a minute on one core for 200 tasks per fold (the docstring; CPU not named)"
LAST_RUN = "by 2026-12-07 (git: the figure's lines in docs/dual_control.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import sys
import time
from collections import defaultdict

import gymnasium

import hindsight.envs  # noqa: F401  (registers the Gymnasium ids)
from hindsight.envs.dual_control import analysis
from hindsight.envs.dual_control.exploits import EXPLOITS
from hindsight.envs.dual_control.folds import make_task
from hindsight.envs.dual_control.red_team import READS, RED_TEAM
from hindsight.envs.dual_control.tasks import heldout_component
from hindsight.evaluation.metrics import wilson_interval

GYM_ID = "hindsight/dual-control-telecom-v0"
FOLD_OFFSETS = {"train": 500, "dev": 0, "test": 0}
"""The first fold position played (train: the "seen" window, past the expert seeds)."""


def task_seeds(env: gymnasium.Env, split: str, count: int) -> list[int]:
    """``count`` task seeds of ``split`` from its offset."""
    return env.unwrapped.environment.seeds(split, count, FOLD_OFFSETS[split])


def play(env: gymnasium.Env, split: str, seed: int, agent) -> bool:
    """Play one episode of ``agent`` (``act(observation)``; None: the gold sequence)."""
    observation, info = env.reset(options={"split": split, "task_seed": seed})
    gold = iter(analysis.gold_actions(split, seed)) if agent is None else None
    done, won = False, False
    while not done:
        action = next(gold, "tell_user fixed") if gold is not None else agent.act(observation)
        observation, _, terminated, truncated, info = env.step(action)
        done, won = terminated or truncated, bool(info["won"]) and terminated
    return won


def measure(names: list[str], count: int) -> dict[str, dict[str, list[tuple[int, bool]]]]:
    """Agent -> fold -> [(seed, won)]."""
    agents = {**RED_TEAM, **EXPLOITS, "gold": None}
    env = gymnasium.make(GYM_ID)
    results: dict[str, dict[str, list[tuple[int, bool]]]] = defaultdict(dict)
    try:
        for split in FOLD_OFFSETS:
            seeds = task_seeds(env, split, count)
            for name in names:
                factory = agents[name]
                results[name][split] = [(seed, play(env, split, seed, factory() if factory else None)) for seed in seeds]
    finally:
        env.close()
    return results


def cell(outcomes: list[tuple[int, bool]]) -> str:
    """pass^1 % with its Wilson 95% interval."""
    wins = sum(won for _, won in outcomes)
    low, high = wilson_interval(wins, len(outcomes))
    return f"{100 * wins / len(outcomes):.1f} ({100 * low:.1f}-{100 * high:.1f})"


def table(results: dict[str, dict[str, list[tuple[int, bool]]]]) -> str:
    """The markdown table: agent, what it reads, pass^1 (Wilson 95%) per fold."""
    lines = ["| agent | reads | train | dev | test |", "|---|---|---|---|---|"]
    for name, folds in results.items():
        reads = READS.get(name, "the gold sequence (analysis)")
        lines.append(f"| {name} | {reads} | " + " | ".join(cell(folds[split]) for split in FOLD_OFFSETS) + " |")
    return "\n".join(lines)


def breakdown(results: dict[str, dict[str, list[tuple[int, bool]]]]) -> str:
    """The test fold's pass^1 by held-out component (the fault family for a held-out fault)."""
    groups: dict[int, str] = {}
    lines = ["| agent | held-out component | tasks | pass^1 |", "|---|---|---:|---|"]
    for name, folds in results.items():
        by_group: dict[str, list[tuple[int, bool]]] = defaultdict(list)
        for seed, won in folds["test"]:
            if seed not in groups:
                groups[seed] = (heldout_component(make_task("test", seed)) or "none").split(" ")[0]
            by_group[groups[seed]].append((seed, won))
        lines += [f"| {name} | {group} | {len(rows)} | {cell(rows)} |" for group, rows in sorted(by_group.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks per fold")
    parser.add_argument("--agents", default="", help="comma-separated agent names (default: all)")
    parser.add_argument("--breakdown", action="store_true", help="also the test fold by held-out component")
    args = parser.parse_args(argv)
    names = [name for name in args.agents.split(",") if name] or [*RED_TEAM, *EXPLOITS, "gold"]
    started = time.perf_counter()
    results = measure(names, args.tasks)
    print(table(results))
    if args.breakdown:
        print()
        print(breakdown(results))
    print(f"\n{args.tasks} tasks per fold; {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Held-out success of behaviour cloning under one choice of settings (prints its figures).

How the default warm-up settings and game parameters were chosen (docs/results.md, "Tuning
the default"): collect the expert episodes, behaviour-clone a fresh embedded policy, and
play it on the held-out "seen" and "unseen" tasks, greedy and sampled, optionally with the
random-valid-action floor on the same tasks. Everything else comes from the project's
parameters (``conf/base``, then ``conf/local``); ``--set`` overrides any of them by its
dotted name, with a YAML value. No Stage 1 and no RL: this isolates the warm-up.

Run from the project root, one setting per invocation (each takes a few minutes on 2 cores;
never two at once on a 2-core machine):

    python benchmarks/behaviour_cloning_settings.py
    python benchmarks/behaviour_cloning_settings.py --set behaviour_cloning.sft.batch_size=16 --set behaviour_cloning.sft.max_steps=250
    python benchmarks/behaviour_cloning_settings.py --episodes 20 --random-floor \\
        --set 'environment.games=[{game: twc, params: {numLocations: 1, numItemsToPutAway: 2, includeDoors: 0}}]'
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = (
    "docs/journal/2026-11-30-json-skills-default.md#tuning-the-default-what-the-warm-up-settings-and-game-parameters-buy",
    "docs/journal/2026-12-04-tiny-default.md#the-default-run-tiny-without-the-valid-action-list",
)
MEASURED = "a few minutes per setting on 2 cores (the docstring; the journal gives no time)"
LAST_RUN = "2026-12-04 (the journal entry's date)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")


ENV_HELP = "configuration environment over conf/base (default: conf/local; conf/test is the test suite's tiny one)"


def project_parameters(conf_source: Path, env: str = "local") -> dict:
    """The merged parameters of ``conf/base`` and ``conf/<env>``, as Kedro reads them."""
    from kedro.config import OmegaConfigLoader

    loader = OmegaConfigLoader(conf_source=str(conf_source), base_env="base", default_run_env=env)
    return copy.deepcopy(dict(loader["parameters"]))


def apply_override(parameters: dict, assignment: str) -> None:
    """Set ``a.b.c=value`` (value parsed as YAML) in the nested parameters."""
    if "=" not in assignment:
        raise SystemExit(f"--set expects name=value, got {assignment!r}")
    name, raw = assignment.split("=", 1)
    keys = name.strip().split(".")
    node = parameters
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            raise SystemExit(f"--set {name}: {key!r} is not a parameter block")
        node = node[key]
    node[keys[-1]] = yaml.safe_load(raw)


def benchmark_settings(assignments: list[str], threads: int | None, base: dict | None = None, env: str = "local") -> dict:
    """The project's typed settings (``conf/base`` and ``conf/<env>``) with ``--set`` overrides
    applied (``base``: overrides applied first), torch threads set, progress bars off: what
    every benchmark starts from."""
    import torch

    from hindsight.config import check_parameters

    threads = threads or int(os.environ.get("HINDSIGHT_TORCH_THREADS", "0"))
    if threads:
        torch.set_num_threads(threads)
    parameters = project_parameters(PROJECT_ROOT / "conf", env)
    for key, value in (base or {}).items():
        parameters[key] = {**parameters.get(key, {}), **value}
    for assignment in assignments:
        apply_override(parameters, assignment)
    settings = check_parameters(parameters)
    settings["project"].rollout.progress = False
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    parser.add_argument("--episodes", type=int, default=20, help="held-out tasks per game and split")
    parser.add_argument("--random-floor", action="store_true", help="also play the random-valid-action agent")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: HINDSIGHT_TORCH_THREADS or all)")
    parser.add_argument("--env", default="local", help=ENV_HELP)
    args = parser.parse_args()

    import dataclasses

    from hindsight.envs import make_env
    from hindsight.evaluation.heldout import evaluate_agents
    from hindsight.evaluation.metrics import success_summary
    from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples, build_initial_policy, train_base_policy
    from hindsight.pipelines.ingestion.nodes import collect_expert_trajectories

    settings = benchmark_settings(args.set, args.threads, env=args.env)
    project, evaluation = settings["project"], settings["evaluation"]

    started = time.perf_counter()
    trajectories, _ = collect_expert_trajectories(project, settings["ingestion"])  # (steps, screenshots)
    examples = behaviour_cloning_examples(trajectories, project)
    policy = build_initial_policy(examples, project, settings["behaviour_cloning"], None)
    trained = time.perf_counter()
    policy, history = train_base_policy(policy, examples, project, settings["behaviour_cloning"])
    cloned = time.perf_counter()

    play = dataclasses.replace(evaluation.heldout, episodes_per_game=args.episodes)
    heldout = project.heldout_config(play)
    episodes = evaluate_agents(
        policy, project.specs(), make_env, project.rollout_config(), heldout, policy_label="bc", include_random=args.random_floor
    )
    evaluated = time.perf_counter()

    summary = success_summary(episodes)
    table = summary.pivot_table(index=["agent", "task_type"], columns="eval_split", values="success_rate")
    print(f"settings: {' '.join(args.set) or '(project parameters)'}")
    print(
        f"expert steps {len(examples)}, behaviour cloning {cloned - trained:.0f} s "
        f"(loss, mean of the last 5 logged steps: {history['loss'].tail(5).mean():.3f}), "
        f"evaluation {evaluated - cloned:.0f} s, {args.episodes} tasks per game and split, "
        f"set-up {trained - started:.0f} s"
    )
    print("held-out success %:")
    print((100 * table).round(1).to_string())


if __name__ == "__main__":
    main()

"""Does a State2State stage before RL change held-out success on the real tasks, at equal budget?

One base policy (behaviour cloning on the expert episodes, as the default run makes it),
then two arms with the same number of RL updates of the same size (GRPO, the same
``training.rl`` settings otherwise):

    rl          ``--updates`` GRPO updates on the real training tasks
    s2s+rl      ``--s2s-updates`` GRPO updates on State2State goal tasks (explored on the
                same training seeds), then ``--updates - --s2s-updates`` on the real tasks

and the base policy and the State2State checkpoint alone for reference. Every policy is
played on the same held-out "seen" and "unseen" tasks (sampled at the evaluation's
temperature, the evaluation seed). Exploration episodes (random + policy) are an extra
environment cost of the s2s arm, printed apart. One seed per invocation; with 20 tasks per
split the noise is about +-10 points, so read small differences as none.

Run from the project root (prints its figures; not a test). The defaults are a small
twc-only setting (12 steps per episode) for one thread of a 2-core machine:

    python benchmarks/state2state.py --threads 1
    python benchmarks/state2state.py --threads 1 --updates 12 --s2s-updates 4 --episodes 30 --set seed=1
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/transition_sources.md#state2state-mid-training-our-reading-of-the-method",)
MEASURED = "run time not given (one thread; CPU not named)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/transition_sources.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import dataclasses
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from behaviour_cloning_settings import ENV_HELP, benchmark_settings  # noqa: E402

TWC_ONLY = {
    "environment": {
        "games": [{"game": "twc", "params": {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}}],
        "max_steps": 12,
    },
    "ingestion": {"expert_episodes": {"train": 60, "dev": 0, "test": 0}},
    "training": {"tasks_per_game": 20},
    "state2state": {"tasks_per_game": 20},
}
"""The benchmark's default setting (``--set`` overrides it)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    parser.add_argument("--updates", type=int, default=6, help="RL updates of each arm in all")
    parser.add_argument("--s2s-updates", type=int, default=None, help="of which State2State updates (default: half)")
    parser.add_argument("--bc-steps", type=int, default=300, help="behaviour-cloning steps of the base policy")
    parser.add_argument("--episodes", type=int, default=20, help="held-out tasks per game and split")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--env", default="local", help=ENV_HELP)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    s2s_updates = args.updates // 2 if args.s2s_updates is None else args.s2s_updates
    if not 0 < s2s_updates < args.updates:
        raise SystemExit("--s2s-updates must lie strictly between 0 and --updates")

    from hindsight.envs import make_env
    from hindsight.evaluation.heldout import evaluate_agents
    from hindsight.evaluation.metrics import success_summary
    from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples, build_initial_policy, train_base_policy
    from hindsight.pipelines.ingestion.nodes import collect_expert_trajectories
    from hindsight.params import as_dict
    from hindsight.state2state.stage import explore_training_games, train_on_goal_tasks
    from hindsight.state2state.task_set import build_task_set
    from hindsight.config import rl_setup
    from hindsight.runs.rl_run import run_rl

    settings = benchmark_settings(args.set, args.threads, base=TWC_ONLY, env=args.env)
    project, training, s2s = settings["project"], settings["training"], settings["state2state"]
    bc = settings["behaviour_cloning"]
    bc = dataclasses.replace(bc, sft=dataclasses.replace(bc.sft, max_steps=args.bc_steps))
    rl = dataclasses.replace(training.rl, algorithm="grpo", updates=args.updates, eval_every=0)
    timings: dict[str, float] = {}

    started = time.perf_counter()
    examples = behaviour_cloning_examples(collect_expert_trajectories(project, settings["ingestion"])[0], project)
    base, _ = train_base_policy(build_initial_policy(examples, project, bc, None), examples, project, bc)
    timings["behaviour cloning"] = time.perf_counter() - started

    setup = rl_setup(project, training)
    policies = {"base": base}

    started = time.perf_counter()
    policies["rl"] = run_rl(base, rl, setup, None, seed=project.seeds.rollouts).policy
    timings["rl arm"] = time.perf_counter() - started

    started = time.perf_counter()
    states = explore_training_games(
        base, project.specs(), project.rollout_config(),
        tasks_per_game=s2s.tasks_per_game, random_episodes=s2s.random_episodes, policy_episodes=s2s.policy_episodes,
        seen_seed_offset=project.environment.seen_seed_offset, seed=project.seeds.rollouts,
    )
    tasks = build_task_set(states, facts_per_goal=s2s.facts_per_goal, max_tasks=s2s.max_tasks, seed=project.seeds.rollouts)
    timings["exploration"] = time.perf_counter() - started
    started = time.perf_counter()
    goal_rl = dataclasses.replace(rl, updates=s2s_updates)  # the same update size and hyperparameters
    with tempfile.TemporaryDirectory() as checkpoints:
        stage = train_on_goal_tasks(
            base, tasks, project.specs(), project.rollout_config(), goal_rl,
            heldout=project.heldout_config(s2s.heldout), seed=project.seeds.rollouts, checkpoint_root=checkpoints,
            settings_fingerprint={
                "project": as_dict(project),
                "state2state": as_dict(dataclasses.replace(s2s, rl=goal_rl, checkpoint_root=checkpoints)),
            },
        )
    policies["s2s"] = stage.policy
    real_rl = dataclasses.replace(rl, updates=args.updates - s2s_updates)
    policies["s2s+rl"] = run_rl(stage.policy, real_rl, setup, None, seed=project.seeds.rollouts).policy
    timings["s2s+rl arm"] = time.perf_counter() - started

    started = time.perf_counter()
    play = dataclasses.replace(settings["evaluation"].heldout, episodes_per_game=args.episodes, decodings={"sampled": {"temperature": 0.4}})
    heldout = project.heldout_config(play)
    tables = [
        evaluate_agents(policy, project.specs(), make_env, project.rollout_config(), heldout, policy_label=name, include_random=False)
        for name, policy in policies.items()
    ]
    timings["evaluation"] = time.perf_counter() - started

    import pandas as pd

    summary = success_summary(pd.concat(tables, ignore_index=True))
    summary = summary[summary["task_type"] != "all"] if (summary["task_type"] != "all").any() else summary
    table = summary.pivot_table(index=["agent", "task_type"], columns="eval_split", values="success_rate")
    per_update = rl.tasks_per_update * rl.group_size
    explored = len(states.groupby(["source", "episode"]))
    print(f"settings: {' '.join(args.set) or '(benchmark defaults)'}; seed {project.seed}; torch threads {args.threads}")
    print(f"games: {[spec.game for spec in project.specs()]}; base policy: {bc.policy.preset}, {args.bc_steps} BC steps on {len(examples)} expert steps")
    print(f"budget per arm: {args.updates} GRPO updates x {per_update} episodes; s2s arm: {s2s_updates} on goal tasks + "
          f"{args.updates - s2s_updates} on real tasks; exploration: {explored} extra episodes, {len(states)} states, {len(tasks)} goal tasks")
    goal_success = stage.history["rollout/success_rate"].tolist()
    print(f"goal-task rollout success per State2State update: {[round(value, 3) for value in goal_success]}")
    print(f"held-out success % (sampled T=0.4, {args.episodes} tasks per game and split):")
    print((100 * table).round(1).to_string())
    print("wall seconds: " + ", ".join(f"{name} {seconds:.0f}" for name, seconds in timings.items()))


if __name__ == "__main__":
    main()

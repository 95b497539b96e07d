"""WM-R1 vs GRPO at equal real-environment steps, and WM-R1's sim-to-real gap (prints figures).

Both methods start from the same behaviour-cloned policy (the expert episodes' steps, shared,
are counted once for both). WM-R1's real steps are the world model's data beyond the expert
episodes: the base policy's rollouts on the training tasks (``--wm-rollouts`` per task).
GRPO then trains on the real environment, one update at a time, until its environment steps
reach that same count (the update that crosses it is kept). WM-R1 trains ``training.rl
.updates`` updates inside the world model (no real step). Both are evaluated on the same
held-out real tasks; the sim-to-real gap plays the same checkpoint on the training tasks in
the world model and in the real environment.

Every setting comes from the project's parameters (``conf/base``) with a small default run
applied on top (twc, tiny models; see ``SMALL_RUN``); ``--set`` overrides any parameter:

    python benchmarks/wmr1_vs_grpo.py --threads 1
    python benchmarks/wmr1_vs_grpo.py --threads 1 --set training.rl.updates=8 --set world_model.sft.max_steps=600
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/transition_sources.md#wm-r1-rl-inside-a-learned-world-model",)
MEASURED = "9.5 min on a loaded 2-core machine (CPU not named)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/transition_sources.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from behaviour_cloning_settings import ENV_HELP, benchmark_settings  # noqa: E402

SMALL_RUN = {
    "environment": {"games": [{"game": "twc", "params": {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}}], "max_steps": 12},
    "ingestion": {"expert_episodes": {"train": 40, "dev": 0, "test": 0}},
    "behaviour_cloning": {
        "policy": {"preset": "tiny", "vocab_size": 800},
        "sft": {"learning_rate": 0.003, "batch_size": 8, "max_steps": 200, "max_length": 768, "bf16_autocast": False, "log_every": 50},
    },
    "world_model": {
        "model": {"preset": "tiny", "vocab_size": 800},
        "sft": {"learning_rate": 0.003, "batch_size": 8, "max_steps": 300, "max_length": 768, "bf16_autocast": False, "log_every": 50},
        "query": {"max_new_tokens": 64}, "heldout_max_examples": 60,
    },
    "training": {
        "tasks_per_game": 40,
        "heldout": {"episodes_per_game": 20, "splits": ["seen", "unseen"], "decodings": {"sampled": {"temperature": 0.4}}},
        "rl": {"updates": 6, "tasks_per_update": 4, "group_size": 4, "learning_rate": 0.001, "mini_batch_size": 32, "eval_every": 0},
    },
}
"""The benchmark's default run (a parameter block here replaces the same keys of conf/base)."""


def success(table) -> float:
    from hindsight.data.outcomes import episode_outcomes

    return float(episode_outcomes(table)["success"].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    parser.add_argument("--wm-rollouts", type=int, default=1, help="base-policy rollouts per training task for the world model's data")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--env", default="local", help=ENV_HELP)
    args = parser.parse_args()

    from hindsight.config import rl_setup
    from hindsight.envs import make_env
    from hindsight.runs.rl_run import run_rl
    from hindsight.evaluation.heldout import heldout_evaluator
    from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples, build_initial_policy, train_base_policy
    from hindsight.pipelines.ingestion.nodes import collect_expert_trajectories
    from hindsight.pipelines.world_model.nodes import (
        build_world_model, train_world_model, world_model_episodes, world_model_examples, world_model_simulator,
    )
    from hindsight.rollout.engine import run_rollouts
    from hindsight.world_model.quality import heldout_quality

    settings = benchmark_settings(args.set, args.threads, base=SMALL_RUN, env=args.env)
    project, training, world = settings["project"], settings["training"], settings["world_model"]
    clock = {"start": time.perf_counter()}

    trajectories, _ = collect_expert_trajectories(project, settings["ingestion"])  # (steps, screenshots)
    examples = behaviour_cloning_examples(trajectories, project)
    base, _ = train_base_policy(build_initial_policy(examples, project, settings["behaviour_cloning"], None), examples, project, settings["behaviour_cloning"])
    clock["bc"] = time.perf_counter()

    setup = rl_setup(project, training)
    data_rollouts = run_rollouts(
        base, make_env, setup.pool, project.rollout_config(group_size=args.wm_rollouts, sampling={"temperature": 1.0}, seed=777), source="rollout"
    ).table
    real_steps = len(data_rollouts)
    none = trajectories.head(0)  # no random exploration, no start-policy episodes: the expert's and the base policy's
    wm_examples = world_model_examples(world_model_episodes(trajectories, data_rollouts, none, none, world), project, world)
    world_model, wm_history = train_world_model(build_world_model(wm_examples, project, world), wm_examples, project, world)
    _, quality = heldout_quality(world_model, wm_examples, max_new_tokens=world.query.max_new_tokens, max_length=world.sft.max_length, max_examples=world.heldout_max_examples)
    simulator = world_model_simulator(world_model, trajectories, data_rollouts, world)
    clock["world_model"] = time.perf_counter()

    wmr1 = run_rl(base, dataclasses.replace(training.rl, algorithm="wmr1"), setup, None, seed=project.seeds.rollouts, world_model=simulator)
    clock["wmr1"] = time.perf_counter()

    grpo_config = dataclasses.replace(training.rl, algorithm="grpo")
    with tempfile.TemporaryDirectory() as checkpoints:
        for updates in range(1, 100):
            grpo = run_rl(base, dataclasses.replace(grpo_config, updates=updates), setup, checkpoints, seed=project.seeds.rollouts)
            if grpo.history["charts/env_steps_total"].iloc[-1] >= real_steps:
                break
    clock["grpo"] = time.perf_counter()

    evaluate = heldout_evaluator(setup.specs, setup.rollout, setup.heldout)
    results = {name: evaluate(policy, 0) for name, policy in (("base (BC)", base), ("WM-R1", wmr1.policy), ("GRPO", grpo.policy))}
    play = project.rollout_config(group_size=1, sampling={"temperature": 0.4}, seed=4321)
    gap = {}
    for name, policy in (("base (BC)", base), ("WM-R1", wmr1.policy)):
        simulated = run_rollouts(policy, simulator.make_env, setup.pool, play, source="world_model").table
        real = run_rollouts(policy, make_env, setup.pool, play).table
        gap[name] = (success(simulated), success(real))
    clock["evaluation"] = time.perf_counter()

    expert_steps = len(trajectories)
    history = wmr1.history
    print(f"settings: SMALL_RUN {' '.join(args.set)}; torch threads {args.threads}")
    print(f"expert episodes {trajectories['episode_id'].nunique()} ({expert_steps} steps, shared by both methods: behaviour cloning)")
    print(f"world model: {len(wm_examples)} transitions ({int(wm_examples['heldout'].sum())} held out), final loss {wm_history['loss'].iloc[-1]:.3f}; "
          f"held-out exact match {quality['world_model/heldout_exact_match']:.3f}, token accuracy {quality['world_model/heldout_token_accuracy']:.3f}, "
          f"solved-marker exact match {quality['world_model/heldout_terminal_exact_match']:.3f}, transition exact match {quality['world_model/heldout_transition_exact_match']:.3f} "
          f"({int(quality['world_model/heldout_examples'])} scored)")
    print(f"real environment steps beyond the expert episodes: WM-R1 {real_steps} (world-model data), "
          f"GRPO {int(grpo.history['charts/env_steps_total'].iloc[-1])} ({len(grpo.history)} updates)")
    print(f"WM-R1: {len(history)} updates, world-model calls {int(history['world_model/calls'].sum())}, simulated success per update "
          f"{[round(v, 2) for v in history['world_model/simulated_success_rate']]}, replayed groups {[int(v) for v in history['world_model/replayed_groups']]}")
    mechanism = {key: [round(float(v), 2) for v in history[key]] for key in history.columns
                 if key in ("world_model/calls_per_step", "world_model/budget_progress", "world_model/length_budget_mean")}
    print(f"WM-R1 mechanism per update: {mechanism}")
    print("held-out success on the real environment (sampled, T=0.4):")
    columns = sorted({key for result in results.values() for key in result if key.endswith("/all/success_rate")})
    for name, result in results.items():
        print(f"  {name:10s} " + "  ".join(f"{key.split('/')[1]}/{key.split('/')[2]} {100 * result[key]:5.1f}%" for key in columns)
              + f"  ({int(result[columns[0].replace('success_rate', 'episodes')]):d} episodes per split)")
    print(f"sim-to-real on the {len(setup.pool)} training tasks (same checkpoint, T=0.4): success in the world model vs in the environment")
    for name, (simulated, real) in gap.items():
        print(f"  {name:10s} world model {100 * simulated:5.1f}%  environment {100 * real:5.1f}%  gap {100 * (simulated - real):+5.1f} points")
    stages = ["bc", "world_model", "wmr1", "grpo", "evaluation"]
    previous = clock["start"]
    timings = []
    for stage in stages:
        timings.append(f"{stage} {clock[stage] - previous:.0f}s")
        previous = clock[stage]
    print("wall time: " + ", ".join(timings))


if __name__ == "__main__":
    main()

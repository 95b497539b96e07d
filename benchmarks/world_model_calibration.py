"""The world model's judgement on the start policy's own real episodes, gold-only against
gold + the policy's episodes (prints figures; docs/transition_sources.md, "The world
model's judgement").

Reads the catalog's newest ``trajectories`` and start policy (``stage1_policy``, or
``base_policy``) of a finished default run (``kedro run``) and writes nothing to the
catalog; ``--from-scratch`` collects the gold episodes and behaviour-clones the start policy
here instead (the smoke test's way, on ``conf/test``). The start policy plays its episodes on the real environment once
(``world_model.policy_episodes``); then two world models are trained with the world-model
stage's nodes, on the same held-out split: **gold only** (the gold episodes, no rollouts,
no random episodes, ``policy_episodes.trained_share`` 0) and **gold + policy** (the same
and the policy's episodes that are not held out). Each is calibrated on the held-out
policy episodes (judged endings) and drives the policy from their tasks' starts
(imagined won share next to the real success rate). Every setting comes from the project's
parameters with ``SMALL_RUN`` on top; ``--set`` overrides any:

    HINDSIGHT_TORCH_THREADS=1 nice python benchmarks/world_model_calibration.py --set world_model.sft.max_steps=600
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/transition_sources.md#the-world-models-judgement-on-the-policys-own-episodes",)
MEASURED = "18 min 35 s wall, 4 min 32 s CPU (user + sys), one torch thread, nice'd on a 2-core Intel Xeon (native bf16) loaded by three training runs"
LAST_RUN = "2026-12-07 (the figures' date in docs/transition_sources.md)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import dataclasses
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from behaviour_cloning_settings import ENV_HELP, PROJECT_ROOT, benchmark_settings  # noqa: E402
from profile_run import cpu_model  # noqa: E402

SMALL_RUN = {
    "world_model": {
        "model": {"preset": "tiny", "vocab_size": 1024},
        "sft": {"learning_rate": 0.003, "batch_size": 8, "max_steps": 300, "max_length": 768, "bf16_autocast": False, "log_every": 50},
        "heldout_max_examples": 40,
        "policy_episodes": {"tasks_per_game": 12, "episodes_per_task": 4},
        "calibration": {"imagined_tasks": 12, "imagined_episodes_per_task": 2},
    },
}
"""The benchmark's default run (a block here replaces the same keys of conf/base's)."""


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def catalog_inputs(env: str, start_from: str) -> dict:
    """The newest ``trajectories`` and start policy of the project's catalog (read only)."""
    from kedro.framework.session import KedroSession
    from kedro.framework.startup import bootstrap_project

    bootstrap_project(PROJECT_ROOT)
    with KedroSession.create(project_path=PROJECT_ROOT, env=env) as session:
        catalog = session.load_context().catalog
        return {"trajectories": catalog.load("trajectories"), "policy": catalog.load(f"{start_from}_policy")}


def scratch_inputs(settings: dict) -> dict:
    """Gold episodes collected here and a policy behaviour-cloned on them (no catalog)."""
    from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples, build_initial_policy, train_base_policy
    from hindsight.pipelines.ingestion.nodes import collect_expert_trajectories

    project, cloning = settings["project"], settings["behaviour_cloning"]
    trajectories, _ = collect_expert_trajectories(project, settings["ingestion"])
    examples = behaviour_cloning_examples(trajectories, project)
    policy, _ = train_base_policy(build_initial_policy(examples, project, cloning, None), examples, project, cloning)
    return {"trajectories": trajectories, "policy": policy}


def arm(name: str, inputs: dict, policy_episodes, settings: dict, trained_share: float) -> dict:
    """One world model trained and calibrated; its figures."""
    from hindsight.pipelines.world_model.calibration_nodes import imagine_heldout_starts, judge_heldout_endings, report_calibration
    from hindsight.pipelines.world_model.nodes import (
        build_world_model, evaluate_world_model, train_world_model, world_model_episodes, world_model_examples, world_model_simulator,
    )

    project = settings["project"]
    world = settings["world_model"]
    world = dataclasses.replace(
        world, use_rollouts=False, random_episodes_per_game=0,
        policy_episodes=dataclasses.replace(world.policy_episodes, trained_share=trained_share),
    )
    clock, cpu = time.perf_counter(), cpu_seconds()
    empty = inputs["trajectories"].head(0)
    episodes = world_model_episodes(inputs["trajectories"], empty, empty, policy_episodes, world)
    examples = world_model_examples(episodes, project, world)
    model, _ = train_world_model(build_world_model(examples, project, world), examples, project, world)
    trained = time.perf_counter()
    evaluation = evaluate_world_model(model, examples, world)
    endings = judge_heldout_endings(model, policy_episodes, project, world)
    judged = time.perf_counter()
    simulator = world_model_simulator(model, inputs["trajectories"], empty, world)
    imagined = imagine_heldout_starts(simulator, inputs["policy"], policy_episodes, project, world)
    table = report_calibration(endings, imagined, policy_episodes)
    train = examples[~examples["heldout"]]
    return {
        "name": name, "table": table, "endings": endings, "imagined": imagined, "examples": train["source"].value_counts().to_dict(),
        "failed_endings": int((train["response"] == "[task failed]").sum()), "solved_endings": int((train["response"] == "[task solved]").sum()),
        "exact_match": float(evaluation["exact_match"].mean()), "calls": simulator.calls,
        "seconds": {"train": trained - clock, "judge": judged - trained, "imagine": time.perf_counter() - judged},
        "cpu_s": cpu_seconds() - cpu,
    }


def report(result: dict) -> None:
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(f"\n== {result['name']} ==")
        print(f"training examples by source {result['examples']}; endings learnt: {result['solved_endings']} solved, {result['failed_endings']} failed")
        print(f"held-out exact match {result['exact_match']:.3f}; imagined world-model calls {result['calls']}")
        print("seconds: " + ", ".join(f"{key} {value:.0f}" for key, value in result["seconds"].items()) + f"; CPU {result['cpu_s']:.0f} s")
        table = result["table"]
        print(table[table["part"] == "endings"].dropna(axis=1, how="all").to_string(index=False, float_format="%.3f"))
        print(table[table["part"] == "imagination"].dropna(axis=1, how="all").to_string(index=False, float_format="%.3f"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    parser.add_argument("--env", default="local", help=ENV_HELP)
    parser.add_argument("--from-scratch", action="store_true", help="collect gold episodes and behaviour-clone the policy here (no catalog)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: HINDSIGHT_TORCH_THREADS or all)")
    parser.add_argument("--arms", default="gold only,gold + policy", help="which arms to run (comma-separated)")
    parser.add_argument("--out", type=Path, default=None, help="a folder for each arm's judged endings and imagined episodes (parquet)")
    args = parser.parse_args()

    from hindsight.data.outcomes import episode_outcomes
    from hindsight.pipelines.world_model.calibration_nodes import play_policy_for_world_model
    from hindsight.evaluation.world_model_judgement import real_ending
    from hindsight.rollout.policy_episodes import heldout_episodes

    settings = benchmark_settings(args.set, args.threads, base=SMALL_RUN, env=args.env)
    project, world = settings["project"], settings["world_model"]
    started, cpu = time.perf_counter(), cpu_seconds()
    inputs = scratch_inputs(settings) if args.from_scratch else catalog_inputs(args.env, world.policy_episodes.start_from)
    policy_episodes = play_policy_for_world_model(inputs["policy"], project, world)
    played = time.perf_counter()
    held = heldout_episodes(policy_episodes, world.heldout_fraction)
    endings = held.sort_values("step").groupby("episode_id").apply(lambda episode: real_ending(episode, project.environment.max_steps))
    print(f"CPU: {cpu_model()}")
    print(
        f"the {world.policy_episodes.start_from} policy: {policy_episodes['episode_id'].nunique()} real episodes, success "
        f"{episode_outcomes(policy_episodes)['success'].mean():.3f}, {time.perf_counter() - started:.0f} s; held out "
        f"{held['episode_id'].nunique()}: {endings.value_counts().to_dict()}"
    )
    shares = {"gold only": 0.0, "gold + policy": 1.0}
    results = [arm(name, inputs, policy_episodes, settings, shares[name]) for name in args.arms.split(",")]
    for result in results:
        report(result)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            stem = result["name"].replace(" ", "").replace("+", "_")
            for part in ("endings", "imagined"):
                result[part].to_parquet(args.out / f"{stem}_{part}.parquet")
    print(f"\nwall {time.perf_counter() - started:.0f} s (policy episodes {played - started:.0f} s); CPU {cpu_seconds() - cpu:.0f} s")


if __name__ == "__main__":
    main()

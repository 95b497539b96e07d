"""How much can a hindsight skill tell that the state does not? Per game configuration (prints a table).

SEED's teacher is the policy with the episode's hindsight skill in context. A skill can only
raise the log-probs of an episode's good actions where the policy, reading the state, was
unsure of them and the skill names them: in a game where everything is in view the state
already tells the action, and the skill is redundant. Per game configuration this script:

1. plays the gold sequence of ``--expert`` train tasks (as ``kedro run``'s ingestion does),
2. behaviour-clones a policy built from scratch on them (the default run's base policy:
   ``conf/base`` settings, ``--bc-steps`` steps),
3. lets it play ``--tasks`` held-out "seen" tasks per game at T = 1 (as RL samples) and at
   T = 0.4 (the held-out evaluation's temperature, for its success rate only),
4. writes the rule teacher's compact skill for each won episode (``analyzer`` settings of
   ``conf/base``: concrete ``do:`` workflows) and scores every played action without the
   skill (``stage1.premise.premise_table``),

and reports, over the won episodes' steps: the share the plain policy was unsure of (the
played action's probability under the decoder below ``stage1.premise.UNSURE_PROBABILITY``),
the share whose action the skill names, and both at once (``informative``: the state left
the choice open and the skill names the answer), with the rule skill's teacher gap for
reference (this base policy never saw a skill in its prompt: its gap says little).

The policy's own skill needs a Stage-1 checkpoint: the premise check of ``kedro run``
(``stage1/premise/own/won/informative_share`` in MLflow) reports the same share for it.

Run from the project root (one torch job at a time; no catalog dataset is read or written):

    python benchmarks/skill_information.py
    python benchmarks/skill_information.py --configs default coin_4_rooms --tasks 40
"""

from __future__ import annotations

GROUP = "skills"
REPRODUCES = ("docs/hidden_information.md#1-how-much-can-a-skill-tell-that-the-state-does-not",)
MEASURED = "80-654 s per game configuration (the table's last column; CPU not named)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/hidden_information.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

DEFAULT_GAMES = [
    ("twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}),
    ("cookingworld", {"numLocations": 1, "numIngredients": 1, "numDistractorItems": 0, "includeDoors": 0, "limitInventorySize": 0}),
]
CONFIGS = {
    "default": DEFAULT_GAMES,
    "coin_4_rooms": [("coin", {"numLocations": 4, "numDistractorItems": 0, "includeDoors": 0, "limitInventorySize": 0})],
    "coin_4_rooms_doors": [("coin", {"numLocations": 4, "numDistractorItems": 0, "includeDoors": 1, "limitInventorySize": 0})],
    "coin_8_rooms_doors": [("coin", {"numLocations": 8, "numDistractorItems": 0, "includeDoors": 1, "limitInventorySize": 0})],
    "coin_6_rooms_doors_distractors": [
        ("coin", {"numLocations": 6, "numDistractorItems": 3, "includeDoors": 1, "limitInventorySize": 0})
    ],
    "twc_2_rooms": [("twc", {"numLocations": 2, "numItemsToPutAway": 2, "includeDoors": 0})],
    "twc_2_rooms_doors": [("twc", {"numLocations": 2, "numItemsToPutAway": 2, "includeDoors": 1})],
    "cookingworld_2_rooms_doors": [
        ("cookingworld", {"numLocations": 2, "numIngredients": 1, "numDistractorItems": 0, "includeDoors": 1, "limitInventorySize": 0})
    ],
}
"""Named game configurations: the default run's (one room, everything in view) and
partially observable ones (objects in other rooms, behind doors)."""


def cpu_model() -> str:
    """The CPU's model name (for the figures' caption)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def base_settings(games, bc_steps: int):
    """The shared settings of ``conf/base`` with ``games`` in place of the default's, and the
    behaviour-cloning settings with ``bc_steps`` steps."""
    import yaml

    from hindsight.config import BehaviourCloningConfig
    from hindsight.config.files import project_settings
    from hindsight.params import build

    params = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "parameters.yml").read_text())
    params["environment"]["games"] = [{"game": game, "params": dict(values)} for game, values in games]
    params["rollout"]["progress"] = False
    project = project_settings(params)
    bc_params = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "parameters_behaviour_cloning.yml").read_text())
    bc = build(BehaviourCloningConfig, bc_params["behaviour_cloning"], "behaviour_cloning")
    bc = dataclasses.replace(bc, sft=dataclasses.replace(bc.sft, max_steps=bc_steps, log_every=10_000))
    return project, bc


def measure(name: str, games, args) -> dict:
    """One configuration's row (see the module docstring)."""
    from hindsight.data.expert import collect_expert_trajectories
    from hindsight.envs import make_env
    from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples, build_initial_policy, train_base_policy
    from hindsight.rollout.engine import run_rollouts
    from hindsight.rollout.tasks import seen_tasks
    from hindsight.skills.analyzers import rule_teacher
    from hindsight.skills.episode_views import episodes_from_table
    from hindsight.stage1.premise import premise_metrics, premise_table

    start = time.perf_counter()
    project, bc = base_settings(games, args.bc_steps)
    trajectories = collect_expert_trajectories(project.specs(), {"train": args.expert}, reward=project.environment.reward)
    expert_steps = trajectories.groupby("episode_id").size().mean()
    examples = behaviour_cloning_examples(trajectories, project)
    policy = build_initial_policy(examples, project, bc, None)
    policy, _ = train_base_policy(policy, examples, project, bc)
    tasks = [task for spec in project.specs() for task in seen_tasks(spec, args.tasks, project.environment.seen_seed_offset)]
    evaluation = run_rollouts(policy, make_env, tasks, project.rollout_config(group_size=1, sampling={"temperature": 0.4}, seed=1))
    rollout = run_rollouts(policy, make_env, tasks, project.rollout_config(group_size=1, sampling={"temperature": 1.0}, seed=2))
    won = [episode for episode in episodes_from_table(rollout.table) if episode.success]
    rule = {r.episode_id: r.skill for r in rule_teacher(project.analyzer).write_skills(won) if r.parse_ok}
    metrics = premise_metrics(premise_table(policy, won, rollout.samples, {"rule": rule}), "info") if won else {}
    get = lambda key: metrics.get(f"info/rule/won/{key}", float("nan"))  # noqa: E731
    return {
        "configuration": name, "expert steps": expert_steps,
        "won T=0.4": float(evaluation.stats["success_rate"]), "won T=1": float(rollout.stats["success_rate"]),
        "won episodes": len(won), "steps": sum(len(e.steps) for e in won),
        "unsure": get("unsure_step_share"), "listed": get("listed_step_share"), "informative": get("informative_share"),
        "rule gap": get("gap_mean"), "seconds": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--expert", type=int, default=100, help="gold train episodes per game (the default run's 100)")
    parser.add_argument("--bc-steps", type=int, default=400, help="behaviour-cloning steps (the default run's 400)")
    parser.add_argument("--tasks", type=int, default=40, help="held-out seen tasks per game")
    args = parser.parse_args()
    import torch

    print(f"CPU: {cpu_model()}; torch threads {torch.get_num_threads()}; expert {args.expert}/game, "
          f"BC {args.bc_steps} steps, {args.tasks} held-out tasks/game", flush=True)
    header = ("configuration", "expert steps", "won T=0.4", "won T=1", "won episodes", "steps", "unsure", "listed",
              "informative", "rule gap", "seconds")
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header), flush=True)
    for name in args.configs:
        row = measure(name, CONFIGS[name], args)
        cells = [row[key] if isinstance(row[key], str) else (f"{row[key]:.3f}" if isinstance(row[key], float) else str(row[key]))
                 for key in header]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

"""The start both EMPO benchmarks share (``empo_vs_grpo.py`` on text games, ``empo_gui.py`` on
MiniWoB++): the gold episodes of the train fold, a fresh policy behaviour-cloned on them (the
one starting checkpoint of every run), and the held-out evaluation of a checkpoint (online in
the real environment, and semi-online on the held-out tasks' gold episodes)."""

from __future__ import annotations

USED_BY = ("empo_vs_grpo.py", "empo_gui.py")
"""The scripts that import this module (the index, ``benchmarks/README.md``)."""

import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class EmpoStart:
    """What the runs of a benchmark start from."""

    policy: Any
    """The behaviour-cloned policy."""
    setup: Any
    """The RL run's setup (``hindsight.config.rl_setup``)."""
    evaluate: Callable[[Any, int], dict[str, float]]
    """(policy, update) -> online held-out metrics plus ``semi_online/*``."""
    semi_online_set: Any
    """The held-out tasks' gold episodes (``ReplaySet``, split ``test``)."""
    cloning_seconds: float
    """Wall seconds of the gold episodes and behaviour cloning."""


def empo_start(settings: dict, training) -> EmpoStart:
    """Collect gold episodes, behaviour-clone a fresh policy and build the held-out evaluator
    for ``training`` (its ``heldout`` block: the seen split's tasks)."""
    from hindsight.config import rl_setup
    from hindsight.envs.expert_replay import ReplaySet, expert_trajectories
    from hindsight.evaluation.heldout import heldout_evaluator, heldout_tasks
    from hindsight.evaluation.semi_online import evaluate_semi_online
    from hindsight.runs.empo_run import gold_trajectories
    from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples, build_initial_policy, train_base_policy
    from hindsight.pipelines.ingestion.nodes import collect_expert_trajectories

    project = settings["project"]
    started = time.perf_counter()
    experts, _ = collect_expert_trajectories(project, settings["ingestion"])  # (steps, screenshots)
    examples = behaviour_cloning_examples(experts, project)
    policy = build_initial_policy(examples, project, settings["behaviour_cloning"], None)
    policy, _ = train_base_policy(policy, examples, project, settings["behaviour_cloning"])
    cloning_seconds = time.perf_counter() - started

    setup = rl_setup(project, training)
    online = heldout_evaluator(setup.specs, setup.rollout, setup.heldout)
    heldout_gold = gold_trajectories(heldout_tasks(setup.specs, setup.heldout)["seen"])
    semi_online_set = ReplaySet({"test": expert_trajectories(heldout_gold, successful_only=False)})

    def evaluate(model_policy, update: int) -> dict[str, float]:
        metrics = online(model_policy, update)
        metrics.update(evaluate_semi_online(model_policy, semi_online_set, setup.rollout, split="test"))
        return metrics

    return EmpoStart(policy, setup, evaluate, semi_online_set, cloning_seconds)

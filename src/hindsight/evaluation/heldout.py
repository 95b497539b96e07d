"""Held-out evaluation: play a policy (and the random-valid-action floor) on tasks never
trained on, in two splits like ALFWorld's seen/unseen.

- "seen": train-fold seeds from position ``seen_seed_offset`` of the fold on (never used for training; same
  object vocabulary as training; None: 500, or half a train fold of fewer than 1000 tasks,
  ``hindsight.rollout.tasks.seen_offset``);
- "unseen": the environment's test fold (new object names).

``trials_per_task`` > 1 plays every task several times, each trial with its own seed, for
pass^k (``evaluation.pass_k``).

Used by the evaluation pipeline and, every K updates, by the RL loop.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd

from hindsight.envs.base import EnvironmentSpec
from hindsight.policy import Policy
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.tasks import TaskRef, seen_tasks, split_tasks
from hindsight.rollout.random_agent import run_random_agent

logger = logging.getLogger(__name__)

MISSING_ATTR = "missing_episodes"
"""``DataFrame.attrs`` key of ``evaluate_agents``' table: planned episodes missing from it,
by "<agent>/<split>" (given up after their replays: ``rollout.replay``); absent when none is."""


@dataclass
class HeldoutConfig:
    """Which held-out tasks, and how the policy decodes on them."""

    episodes_per_game: int = 25
    """Tasks per game and split (one episode each)."""
    seen_seed_offset: int | None = None
    """First train-fold seed of the "seen" split; must exceed every training seed. None: 500,
    or half the game's train fold when it holds fewer than 1000 tasks (``seen_offset``)."""
    splits: tuple[str, ...] = ("seen", "unseen")
    """Which held-out splits to play."""
    decodings: dict = dataclasses.field(default_factory=lambda: {"sampled": 0.4, "greedy": 0.0})
    """Agent name suffix -> sampling temperature (0 = greedy)."""
    random_floor: bool = True
    """Also play the random-valid-action agent on the same tasks."""
    seed: int = 1234
    """Seed of sampling during evaluation (trial t plays with ``seed + t``)."""
    trials_per_task: int = 1
    """Independent trials of every task and agent, each with its own seed (pass^k)."""

    def __post_init__(self) -> None:
        if int(self.trials_per_task) < 1:
            raise ValueError(f"HeldoutConfig.trials_per_task must be >= 1, got {self.trials_per_task!r}")


def heldout_tasks(specs: Sequence[EnvironmentSpec], config: HeldoutConfig) -> dict[str, list[TaskRef]]:
    """The held-out task list of each split (``seen`` / ``unseen``)."""
    tasks: dict[str, list[TaskRef]] = {}
    for split in config.splits:
        if split == "seen":
            tasks[split] = [task for spec in specs for task in seen_tasks(spec, config.episodes_per_game, config.seen_seed_offset)]
        else:
            tasks[split] = [task for spec in specs for task in split_tasks(spec, "test", config.episodes_per_game)]
    return tasks


def evaluate_agents(
    policy: Policy,
    specs: Sequence[EnvironmentSpec],
    env_factory: Callable,
    rollout_config: RolloutConfig,
    config: HeldoutConfig,
    policy_label: str = "policy",
    include_random: bool | None = None,
) -> pd.DataFrame:
    """Play every agent on every held-out split.

    Every agent plays every task ``config.trials_per_task`` times: trial t is a rollout of
    its own with seed ``config.seed + t`` (trial 0 is the single-trial evaluation).

    Returns:
        The step table of all evaluation episodes with three extra columns: ``agent``
        (e.g. "policy-sampled", "policy-greedy", "random"), ``eval_split`` and ``trial``;
        planned episodes that are not in it counted in ``attrs[MISSING_ATTR]``.
    """
    tables, missing = [], {}
    include_random = config.random_floor if include_random is None else include_random
    for split, tasks in heldout_tasks(specs, config).items():
        for trial in range(config.trials_per_task):
            seed = config.seed + trial
            for name, temperature in config.decodings.items():
                settings = dataclasses.replace(rollout_config, group_size=1, temperature=float(temperature), seed=seed)
                result = run_rollouts(policy, env_factory, tasks, settings, policy_version=getattr(policy, "version", 0))
                tables.append(_label(result.table, f"{policy_label}-{name}", split, trial))
                _count_missing(missing, f"{policy_label}-{name}/{split}", result.faults)
            if include_random:
                result = run_random_agent(
                    env_factory, tasks, max_steps=rollout_config.max_steps, prompt=rollout_config.prompt, seed=seed,
                    episode_replays=rollout_config.episode_replays,
                )
                tables.append(_label(result.table, "random", split, trial))
                _count_missing(missing, f"random/{split}", result.faults)
    episodes = pd.concat(tables, ignore_index=True)
    if missing:
        episodes.attrs[MISSING_ATTR] = missing
    return episodes


def _count_missing(missing: dict[str, int], where: str, faults) -> None:
    """Add a rollout's given-up episodes (``RolloutFaults.failed``) to ``missing[where]``."""
    if faults.failed:
        missing[where] = missing.get(where, 0) + len(faults.failed)
        logger.warning("Held-out %s: %d planned episode(s) missing, their environment failed on every try.", where, len(faults.failed))


def _label(table: pd.DataFrame, agent: str, split: str, trial: int = 0) -> pd.DataFrame:
    """Tag an agent's episodes; episode ids get the agent as prefix, since two decodings of
    one policy on the same tasks would otherwise share ids (the trials' ids differ by their
    rollout seed)."""
    return table.assign(
        agent=agent, eval_split=split, trial=int(trial), episode_id=agent + ":" + table["episode_id"].astype(str)
    )

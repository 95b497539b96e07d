"""The RL loop across the ranks of a data-parallel learner (``training.data_parallel``):
rollouts sharded by task group, then one update on the whole batch.

Per update, every rank draws the same tasks (same seed) and plays only its share
(``shard_tasks``: whole groups, so a group's episodes, and hence its group-relative
advantages, stay on one rank). Advantages, skills and skill-augmented log-probs are
computed where the episodes were played. ``gather_update_batch`` then gives every rank the
whole batch in rank order, and ``update_policy`` runs each rank on its stripe of every
mini-batch under DDP, so all ranks take the same optimizer step and keep the same weights.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import pandas as pd
import torch

from hindsight.rollout.stats import FAULTS_ATTR
from hindsight.rollout.tasks import TaskRef
from hindsight.training.batch import RolloutBatch
from hindsight.training.data_parallel import DataParallel

RATE_SUFFIX = "_rate"


def shard_tasks(parallel: DataParallel, tasks: Sequence[TaskRef]) -> list[TaskRef]:
    """This rank's tasks: every world-size-th group (by first appearance), all its tasks."""
    groups = list(dict.fromkeys(task.group_id for task in tasks))
    if len(groups) < parallel.world_size:
        raise ValueError(
            f"training.rl.tasks_per_update gives {len(groups)} task group(s) for {parallel.world_size} learner "
            "processes: every process needs at least one (raise tasks_per_update or use fewer processes)"
        )
    mine = set(parallel.stripe(groups))
    return [task for task in tasks if task.group_id in mine]


def gather_update_batch(parallel: DataParallel, batch: RolloutBatch) -> RolloutBatch:
    """Every rank's rollout table, samples, log-probs, advantages and skills, concatenated in
    rank order, on every rank; the table keeps the summed fault counts in its attrs (rates
    averaged over the ranks)."""
    faults = parallel.sum_metrics(batch.table.attrs.get(FAULTS_ATTR, {}))
    faults = {key: value / parallel.world_size if key.endswith(RATE_SUFFIX) else value for key, value in faults.items()}
    whole = pd.concat(parallel.gather([batch.table]), ignore_index=True)
    whole.attrs[FAULTS_ATTR] = faults
    skills = batch.skills if batch.skills is not None else pd.DataFrame()
    skill_tables = [frame for frame in parallel.gather([skills]) if len(frame)]
    return dataclasses.replace(
        batch,
        table=whole,
        played=whole,
        samples=parallel.gather(batch.samples),
        advantages=torch.cat(parallel.gather([batch.advantages])),
        old_logp=parallel.gather(batch.old_logp),
        teacher_logp=parallel.gather(batch.teacher_logp),
        skills=pd.concat(skill_tables, ignore_index=True) if skill_tables else batch.skills,
    )


def mean_over_ranks(parallel: DataParallel, metrics: dict[str, float]) -> dict[str, float]:
    """Each metric's mean over the ranks that have it (per-rank analysis metrics)."""
    sums = parallel.sum_metrics(metrics)
    counts = parallel.sum_metrics({key: 1.0 for key in metrics})
    return {key: value / counts[key] for key, value in sums.items()}

"""Multi-turn rollouts: the batched engine (``engine``), one live episode (``live_episode``),
the environment pool (``env_pool``), the random-valid-action floor (``random_agent``), task
references, pools and per-update draws (``tasks``), rollout statistics (``stats``), the
result a rollout returns (``results``), and what a
rollout does when an environment crashes or hangs under an episode (``replay``: play it
again from its start; ``faults``: what is recorded)."""

from hindsight.rollout.engine import RolloutConfig, RolloutResult, planned_episode_ids, run_rollouts
from hindsight.rollout.env_pool import EnvPool
from hindsight.rollout.faults import FailedEpisode, RolloutFaults
from hindsight.rollout.random_agent import run_random_agent
from hindsight.rollout.stats import rollout_stats
from hindsight.rollout.tasks import TaskRef, as_task_ref, make_tasks

__all__ = [
    "EnvPool",
    "FailedEpisode",
    "RolloutConfig",
    "RolloutFaults",
    "RolloutResult",
    "TaskRef",
    "as_task_ref",
    "make_tasks",
    "planned_episode_ids",
    "rollout_stats",
    "run_random_agent",
    "run_rollouts",
]

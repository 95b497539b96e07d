"""WM-R1: GRPO inside a learned world model, with replayed successes and a reward that
prices length and world-model calls.

Each point says whether it follows WM-R1's official code (its repository's latest commit:
the reward module, the GUI agent, the trainer) or is our reading (docs/fidelity.md, WM-R1).

Transitions (follows): the training episodes play in the world model's environments
(``world_model.environment``; the pipeline ``wmr1`` loads the trained simulator); held-out
evaluation stays in the real environment.

Thinking with the world model (``thinking``): ``imaginary_turn`` (the default; follows the
official code): a turn may be ``imagine: <a>`` (a world-model call) instead of an action; the
world model's prediction returns as the next observation (a new message) and the policy
generates again. The turn is not counted in the step limit, the world model's state advances
along the imagined action, the turn never ends the episode (only a committed action is
judged, as in the official worker: no win with 0 committed actions), and an episode makes at
most ``n_wm_max`` of them (``world_model.environment``). The
``imagine:`` response is the policy's own sample, trained like any step; the prediction is
prompt text of the next step, never in the loss. Held-out evaluation in the real game has no
imaginary turns. ``in_response`` (our reading): the calls are forced tokens inside one step's
response, masked from the loss, at most ``calls_per_step`` per committed step, the state not
advanced (``rollout.imagination``; column ``imagination_calls``), also in held-out evaluation
with ``heldout_imagination``. ``imagined_turns`` (another reading): separate turns that
show the prediction without advancing the state, count in the step limit, at most
``imagined_turns`` before each committed action. ``none``: no world-model calls.

Between the rollout and the update:

1. Replay (follows; ``replay``, ``replay_source: own_successes``, ``methods.wmr1_replay``):
   the policy's own won episodes are kept per task across updates (at most
   ``replay_per_task``, 8) and (our extension) in the checkpoint; a group whose success judgments have
   std < 0.05 and mean < 0.2 has its first rollout swapped for one of them, which keeps its
   stored rows and samples (length, world-model calls) and is scored like any rollout; its
   behaviour log-probs are the current policy's. ``replay_source: expert_episodes`` (our
   reading, kept as a named option): the last rollout of an all-failure group is swapped
   for a won expert episode of the trajectory table, its step samples rebuilt from the table
   and scored by the current policy, with ``R_wm`` forced to 0 (its 0 calls would otherwise
   earn the top utilisation bonus).
2. Scores (follows): one per trajectory, ``algorithms.wm_r1_rewards`` = ``1.0 R_succ +
   0.5 R_len + gamma R_wm`` (``world_model_weight``, gamma: 0.1 as the official main run
   trains, 0 the official default config and its no-think ablation) with the budgets ``p * L_ref + (1 - p) * max_steps`` (lengths) and
   ``p * N_WM_ref + (1 - p) * n_wm_max`` (world-model calls), ``p = c / N`` the task group's
   success rate, ``L_ref`` / ``N_WM_ref`` the means over the group's successes (else the
   group's largest), a budget of 0 read as 1. The length counts committed actions;
   ``n_wm`` counts imaginary world-model calls only (``world_model_calls``: the in-response
   calls and accepted imaginary or imagined turns; a committed action's transition is not
   a call).
   A reading kept as a named option: ``length_budget: training_progress`` (``p`` = update /
   updates). Advantages: GRPO over the task group, statistics taken over trajectories.
3. Metrics (``world_model/...``): world-model calls of the update, imaginary calls
   (``n_wm``) per committed step (``calls_per_step``), simulated success rate (before
   replay), all-failure groups, replayed groups, imaginary/imagined turns and the replay
   buffer's episodes.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd
import torch

from hindsight.data.outcomes import episode_outcomes
from hindsight.training.method import Method, MethodContext
from hindsight.methods.wmr1_replay import SuccessBuffer, replay_own_successes, swap_episodes
from hindsight.methods.wmr1_rewards import wmr1_advantages, wmr1_sample_scores, world_model_metrics
from hindsight.policy import Policy
from hindsight.policy.encoding import StepSample
from hindsight.rollout.engine import RolloutConfig
from hindsight.rollout.imagination import CALLS_COLUMN, Imagination
from hindsight.training.batch import RolloutBatch
from hindsight.training.positive_replay import REPLAY_SOURCE, rebuild_scored_samples
from hindsight.training.rl_config import RLConfig
from hindsight.training.update_batch import round_seed
from hindsight.world_model.environment import WorldModelSimulator

LENGTH_BUDGETS = ("group_success_rate", "training_progress")
REPLAY_SOURCES = ("own_successes", "expert_episodes")
THINKING = ("imaginary_turn", "in_response", "imagined_turns", "none")


def replay_stored_successes(
    policy, table: pd.DataFrame, samples: list[StepSample], simulator: WorldModelSimulator, rollout: RolloutConfig, update: int
) -> tuple[pd.DataFrame, list[StepSample], int]:
    """Swap the last rollout of each all-failure group for a won expert episode of its task
    (``replay_source: expert_episodes``, our reading).

    Args:
        policy: The current policy (scores the replayed steps).
        table: The rollout table (world-model episodes).
        samples: Its step samples, one per row, same order.
        simulator: Holds the recorded tasks and their won episodes.
        rollout: The rollout settings (prompt format, constrained decoding, token budget).
        update: The update index (picks which stored success when there are several).

    Returns:
        (table, samples, number of replayed groups).
    """
    outcomes = episode_outcomes(table, keys=["group_id"])
    failed = outcomes.groupby("group_id")["success"].any()
    replaced, extra_rows = [], []
    for group_id in sorted(failed[~failed].index):
        stored = simulator.tasks.won_episodes.get(group_id) or []
        if not stored:
            continue
        last = sorted(outcomes.loc[outcomes["group_id"] == group_id, "episode_id"])[-1]
        rows = simulator.tasks.episode_rows(stored[update % len(stored)]).copy()
        rows["episode_id"] = f"{REPLAY_SOURCE}/{group_id}/v{update}"
        rows["source"] = REPLAY_SOURCE
        rows["policy_version"] = update
        replaced.append(last)
        extra_rows.append(rows)
    if not replaced:
        return table, samples, 0
    replay = pd.concat(extra_rows, ignore_index=True)
    if CALLS_COLUMN in table.columns:
        replay[CALLS_COLUMN] = 0  # a stored episode made no in-response world-model call
    replay, replay_samples, logp = rebuild_scored_samples(policy, replay, rollout)
    replay_samples = [dataclasses.replace(s, old_logprobs=lp) for s, lp in zip(replay_samples, logp)]
    replay["response_logprobs"] = [lp.tolist() for lp in logp]
    return swap_episodes(table, samples, replaced, replay, replay_samples)


@dataclass
class WMR1Settings:
    """``training.rl.methods.wmr1``."""

    replay: bool = True
    """Replay stored successes into groups without a success (``replay_source``)."""
    replay_source: str = "own_successes"
    """own_successes (the official code: the policy's own earlier wins on the task, kept
    across updates and, our extension, in the checkpoint, swapped for the first rollout of a group whose
    success judgments have std < 0.05 and mean < 0.2, scored with their stored counts;
    ``methods.wmr1_replay``) or expert_episodes (our reading: a won expert episode from the
    trajectory table swapped for the last rollout of an all-failure group, earning no
    ``R_wm``)."""
    replay_per_task: int = 8
    """own_successes: most won episodes kept per task (official 8; the oldest go first)."""
    thinking: str = "imaginary_turn"
    """How the policy thinks with the world model: imaginary_turn (the official code: an
    ``imagine: <a>`` turn whose prediction returns as a new message; not in the step limit,
    the state advances, at most ``n_wm_max`` per episode), in_response (our reading: forced
    prediction tokens inside one response, ``calls_per_step`` per step, the state not
    advanced), imagined_turns (another reading: separate turns within the step limit, the
    state kept, ``imagined_turns`` before each action) or none. The calls count in R_wm."""
    calls_per_step: int = 5
    """in_response: most world-model calls inside one step's response (the predictions are
    forced tokens, masked from the loss)."""
    heldout_imagination: bool = True
    """in_response: held-out evaluation (real environment) lets the policy call the world
    model in its responses too, ``calls_per_step`` at most; it acts in the real game."""
    imagined_turns: int = 1
    """imagined_turns: most imagined turns before each committed action (each shows the
    prediction for ``a`` without playing it, counts in the step limit, not in R_len)."""

    n_wm_max: int = 5
    """``R_wm``'s call limit: the call budget is ``p * N_WM_ref + (1 - p) * n_wm_max``
    (``N_WM_ref`` = mean world-model calls of the group's successes; official default 5).
    It prices calls and, with ``thinking: imaginary_turn``, caps an episode's calls."""
    world_model_weight: float = 0.1
    """gamma, the weight of ``R_wm`` in ``1.0 R_succ + 0.5 R_len + gamma R_wm``: 0.1 as the
    official main run trains (its training script sets ``reward.gamma=0.1``); the official
    default config has 0, which its no-think ablation inherits: ``thinking: none`` with 0
    gives that ablation's rewards exactly."""
    length_budget: str = "group_success_rate"
    """The ``p`` of both budgets (``p * L_ref + (1 - p) * L_max``, ``p * N_WM_ref + (1 - p) *
    n_wm_max``): group_success_rate (``p = c / N``, the task group's success rate: the
    official code and the paper) or training_progress (``p`` = update / updates, tightening
    over training: our reading, from an official commit its authors reverted)."""

    def __post_init__(self) -> None:
        for name, choices in (("thinking", THINKING), ("replay_source", REPLAY_SOURCES), ("length_budget", LENGTH_BUDGETS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {getattr(self, name)!r}")
        no_calls = "thinking: none for no calls"
        counts = {
            "imagined_turns": no_calls, "calls_per_step": no_calls, "n_wm_max": "the call budget's limit",
            "replay_per_task": "replay: false for none",
        }
        for name, why in counts.items():
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1 ({why}), got {getattr(self, name)}")
        if self.world_model_weight < 0:
            raise ValueError(f"world_model_weight must be >= 0 (0: no R_wm), got {self.world_model_weight}")


class WMR1(Method):
    """GRPO on world-model rollouts with the replay of its own successes and the WM-R1 reward."""

    name = "wmr1"

    Settings = WMR1Settings
    transition_source = "world_model"
    row_source = "world_model"
    requires = {"schedulers.stepo.filter_zero_variance": False, "schedulers.async_rollouts.enabled": False}

    def check(self, rl: RLConfig, *, parallel: bool) -> None:
        if self.context.world_model is None:
            raise ValueError("training.rl.algorithm='wmr1' rolls out inside a trained world model: run `kedro run --pipeline wmr1`")
        curriculum = rl.schedulers.curriculum
        if parallel or (curriculum.enabled and curriculum.positive_replay):
            raise ValueError(
                "training.rl.algorithm='wmr1' runs in one process and without the "
                "curriculum's positive replay (training.rl.schedulers.curriculum.positive_replay: its replay works on "
                "whole groups; the world model lives in the learner)"
            )

    def __init__(self, settings: WMR1Settings | None = None, context: MethodContext | None = None) -> None:
        super().__init__(settings, context)
        self.buffer = SuccessBuffer(self.settings.replay_per_task)
        """The policy's own stored successes (``replay_source: own_successes``)."""

    def start(self, policy: Policy) -> None:
        self._calls_seen = self.context.world_model.calls

    def state_dict(self) -> dict[str, Any]:
        """The replay buffer, for the checkpoint."""
        return {"replay_buffer": self.buffer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the replay buffer of a resumed run."""
        self.buffer.load_state_dict(state.get("replay_buffer", {}))

    def transitions(self, env_factory: Callable) -> Callable:
        """The world model's environments, with imaginary or imagined turns as ``thinking``
        says (called right before each update's rollout: world-model calls are counted from
        here, so held-out evaluation's calls stay out of ``world_model/calls``)."""
        self._calls_seen = self.context.world_model.calls
        thinking, make_env = self.settings.thinking, self.context.world_model.make_env
        if thinking == "imaginary_turn":
            return functools.partial(make_env, imaginary_turns=self.settings.n_wm_max)
        return functools.partial(make_env, imagined_turns=self.settings.imagined_turns if thinking == "imagined_turns" else 0)

    def rollout_settings(self, rollout: RolloutConfig, *, heldout: bool) -> RolloutConfig:
        """``thinking: in_response``: in-response world-model calls (``calls_per_step``), in
        training and, with ``heldout_imagination``, in held-out evaluation."""
        calls = self.settings.calls_per_step
        if self.settings.thinking != "in_response" or (heldout and not self.settings.heldout_imagination) or self.context.world_model is None:
            return rollout
        return dataclasses.replace(rollout, imagination=Imagination(self.context.world_model, calls))

    def after_rollout(self, policy: Policy, batch: RolloutBatch, rollout: RolloutConfig, rl: RLConfig, seed: int, update: int) -> None:
        """Replay stored successes (``replay_source``); the ``world_model/...`` metrics."""
        world_model = self.context.world_model
        replayed = 0
        if self.settings.replay and self.settings.replay_source == "own_successes":
            batch.table, batch.samples, replayed = replay_own_successes(
                policy, batch.table, batch.samples, self.buffer, update, round_seed(seed, update, 1)
            )
            batch.metrics["world_model/replay_buffer_episodes"] = float(len(self.buffer))
        elif self.settings.replay:
            settings = dataclasses.replace(rollout, group_size=rl.group_size, seed=round_seed(seed, update, 0))
            batch.table, batch.samples, replayed = replay_stored_successes(policy, batch.table, batch.samples, world_model, settings, update)
        calls, self._calls_seen = world_model.calls - self._calls_seen, world_model.calls
        batch.metrics.update(world_model_metrics(batch.played, replayed, calls))
        progress = self.progress(batch, rl)
        if progress is not None:  # how far the budgets have tightened toward L_ref
            batch.metrics["world_model/budget_progress"] = progress
        batch.recorded, batch.simulated = batch.table, True

    def progress(self, batch: RolloutBatch, rl: RLConfig) -> float | None:
        """The ``p`` of the budgets: the training progress, or None (each group's success rate)."""
        return batch.update / rl.updates if self.settings.length_budget == "training_progress" else None

    def counting(self) -> dict[str, Any]:
        """How ``wmr1_scores`` counts calls under these settings."""
        expert = self.settings.replay_source == "expert_episodes"
        return {"n_wm_max": self.settings.n_wm_max, "mask_replayed_calls": expert, "world_model_weight": self.settings.world_model_weight}

    def episode_scores(self, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> torch.Tensor:
        return wmr1_sample_scores(batch.table, max_steps, self.progress(batch, rl), **self.counting())

    def advantages(self, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> torch.Tensor:
        return wmr1_advantages(batch.table, rl.std_normalize, max_steps, self.progress(batch, rl), **self.counting())

"""The batched multi-turn rollout engine: many episodes step together.

``run_rollouts(policy, env_factory, tasks, config)`` plays ``group_size`` episodes on every
task (same seed, same ``group_id``: one group). Up to ``max_parallel`` episodes are live at
once, each on an environment borrowed from a pool (``EnvPool``; environments are built once
through ``env_factory`` and reset to each new task; a spec marking an infeasible variant or
the declare action builds it, ``envs.infeasible.declaring_factory``). Every turn:

1. each live episode builds its prompt (history window, pinned facts, the episode's skill);
2. ONE batched generation answers all of them (``policy.generation.generate``: KV cache,
   identical prompts prefilled once, constrained to the valid actions by default);
3. each episode sends its action to its environment and records the table row and the step
   sample (``policy.encoding.StepSample``: the generation's prompt ids, response ids,
   allowed ids and old log-probs, stamped with the episode's identity);
4. episodes that ended (won, env terminated/truncated, ``max_steps``) give their
   environment back and the next queued episodes start in their slots.

With ``config.imagination`` set (WM-R1), step 2 lets the policy call the world model inside
its response before it commits (``rollout.imagination``); the table then has a column
``imagination_calls`` (calls per step).

An episode whose environment crashes or hangs (``step_timeout_s``) is replayed from its
start on a restarted environment (same id, task and seed; at most
``config.episode_replays`` times; ``rollout.replay``): its cut-off try leaves the table,
and the rollout goes on. An environment that keeps failing stops the run; the failed tries
and any episode given up are in ``RolloutResult.faults``, counted in the stats and
``rollout_metrics`` (``rollout.faults``).

What batching buys: the token-loop forward passes serve all live episodes at once, and
identical prompts (a group's first step) are read once. On a CPU, reading the prompt is
compute-bound and batching does not reduce its arithmetic, so the gain is small there
(``benchmarks/rollout_throughput.py``); on an accelerator it grows with ``max_parallel``.
Two layouts (``layout``): ``stepwise`` builds a prompt per step (history window, the SEED
paper's; nothing cached across turns); ``multiturn`` keeps each episode one growing token
sequence with its own KV cache across turns and prefills only the new observation
(``rollout.multiturn``); truncated contexts are re-read and counted
(``rollout/context_reprefills``).

The step-wise generation runs on ``config.inference_backend()`` (``policy.backends``; by default the
torch engine), which gets the policy's weights at the start of every rollout
(``weight_sync_seconds`` in the stats, ``rollout/weight_sync_s`` in the table's metrics).

The recorded log-probs are the policy's own T=1 distribution, restricted to the allowed
tokens when decoding is constrained (``policy.logprobs``), whatever the sampling
temperature: what the trainer recomputes as ``old_logp``.

A vision policy (``policy.vision``) reads each step's screenshot beside its prompt: the
episodes take the environment's ``screenshot()`` after every reset and step, and the turn's
generation gets them (``policy.vision.screen_image``); it plays the step-wise layout on the
torch engine (``policy.vision.check_vision_rollout``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from typing import Any, Mapping, Sequence

import torch
from tqdm.auto import tqdm

from hindsight.envs.base import EnvironmentCrashedError
from hindsight.envs.infeasible import declaring_factory
from hindsight.policy import Policy
from hindsight.policy.encoding import StepSample
from hindsight.policy.backends import check_layout
from hindsight.policy.generation import generate
from hindsight.policy.prompts import parse_action
from hindsight.policy.vision import check_vision_rollout, screen_image
from hindsight.rollout.config import RolloutConfig
from hindsight.rollout.env_pool import EnvFactory, EnvPool
from hindsight.rollout.faults import RolloutFaults
from hindsight.rollout.imagination import CALLS_COLUMN, check_imagination, generate_with_imagination
from hindsight.rollout.live_episode import Episode
from hindsight.rollout.multiturn import multiturn_generations
from hindsight.rollout.replay import Replays, restart_env, start_episode
from hindsight.rollout.results import RolloutResult, RolloutTimer, finished_table, log_result, result_stats
from hindsight.rollout.tasks import as_task_refs, episode_plan

logger = logging.getLogger(__name__)


def run_rollouts(
    policy: Policy,
    env_factory: EnvFactory | None,
    tasks: Sequence[Any],
    config: RolloutConfig | None = None,
    *,
    policy_version: int = 0,
    skills: Mapping[str, str] | None = None,
    source: str = "rollout",
    env_pool: EnvPool | None = None,
) -> RolloutResult:
    """Play ``config.group_size`` episodes per task with the policy, batched.

    Args:
        policy: A ``policy.model.Policy`` (model + tokenizer).
        env_factory: Builds an environment for a spec (e.g. ``hindsight.envs.make_env``);
            may be None when ``env_pool`` is given.
        tasks: Task references (``TaskRef`` or ``(spec, seed, split)``); N episodes each.
        config: Rollout settings.
        policy_version: Written to the table's ``policy_version``.
        skills: Optional skill text per ``episode_id`` or ``group_id``: injected into every
            prompt of that episode (after the task line).
        source: Written to the table's ``source`` (and the episode ids' prefix).
        env_pool: A pool to borrow environments from (kept open afterwards); by default a
            pool of ``max_parallel`` environments is built and closed here.

    Returns:
        ``RolloutResult``: ``table`` (trajectory table + ``response_logprobs``), ``samples``
        (one per table row, same order) and ``stats`` (episodes, success_rate, mean_steps,
        invalid_action_rate, off_list_action_rate, failed_episodes, failed_episode_rate,
        episode_replays, step_timeouts, env_restarts, env_steps_per_s,
        generated_tokens_per_s, ...) and ``faults`` (the tries the environment failed under
        and the episodes given up, see ``rollout.faults``).

    Raises:
        EnvironmentCrashedError: The environment keeps failing (an episode's every try
            died with it: ``rollout.replay``), or every episode failed.
    """
    config = config or RolloutConfig()
    task_refs = as_task_refs(tasks)
    _check_rollout_arguments(config, env_factory, env_pool)
    check_vision_rollout(policy, config.layout, config.imagination, config.backend)
    pool = env_pool or EnvPool(declaring_factory(env_factory), max_size=config.max_parallel)
    queue = deque(episode_plan(task_refs, config.group_size, config.seed, policy_version, source))
    timer = RolloutTimer(weight_sync=config.inference_backend().sync(policy))
    model = policy.model
    was_training = model.training
    model.eval()
    faults = RolloutFaults(planned=len(queue))
    replays = Replays(faults, config.episode_replays)
    started = time.perf_counter()
    finished: list[tuple[int, Episode, list[StepSample]]] = []
    try:
        finished = _play(policy, pool, queue, config, skills or {}, source, policy_version, timer, replays)
    finally:
        model.train(was_training)
        if env_pool is None:
            pool.close()
    wall = time.perf_counter() - started
    faults.check_some_finished(len(finished))

    table, samples = finished_table(finished, faults, timer, imagined=config.imagination is not None)
    stats = result_stats(table, faults, timer, wall)
    log_result(stats)
    return RolloutResult(table=table, samples=samples, stats=stats, faults=faults)


def _check_rollout_arguments(config: RolloutConfig, env_factory: EnvFactory | None, env_pool: EnvPool | None) -> None:
    """Reject a group size below 1 and a call with neither an environment factory nor a pool."""
    if config.group_size < 1:
        raise ValueError(f"RolloutConfig.group_size must be >= 1, got {config.group_size}.")
    if env_pool is None and env_factory is None:
        raise ValueError("run_rollouts: give an env_factory or an env_pool.")
    check_imagination(config.imagination, config.sampling.constrained, config.layout)
    check_layout(config.inference_backend(), config.layout, config.imagination)


def planned_episode_ids(
    tasks: Sequence[Any], config: RolloutConfig, *, policy_version: int = 0, source: str = "rollout"
) -> list[str]:
    """The episode ids ``run_rollouts`` will use for these arguments, in plan order: task by
    task, the ``group_size`` members of a task consecutive (e.g. to key ``skills`` by episode).

    Args:
        tasks: The task references that will be passed to ``run_rollouts``.
        config: The rollout settings (``group_size`` and ``seed`` enter the ids).
        policy_version: The policy version that will be passed.
        source: The source that will be passed.

    Returns:
        One episode id per planned episode.
    """
    plan = episode_plan(as_task_refs(tasks), config.group_size, config.seed, policy_version, source)
    return [episode_id for _, _, episode_id in plan]


def _play(policy: Policy, pool, queue, config, skills, source, policy_version: int, timer, replays: Replays) -> list:
    """The turn loop (see the module docstring); returns (order, episode, samples) triples.
    A failed try goes back to the front of ``queue`` while ``replays`` allows it."""
    sampling = config.sampling
    generator = torch.Generator().manual_seed(config.seed)
    live: list[tuple[int, Episode, list[StepSample]]] = []
    finished = []
    total = len(queue)
    progress = tqdm(total=total, desc="rollout", unit="episode", disable=not config.progress or total == 0)
    steps_done, loop_started = 0, time.perf_counter()
    try:
        while queue or live:
            while queue and len(live) < config.max_parallel:
                order, task, episode_id = queue.popleft()
                try:
                    episode = _start_episode(pool, task, episode_id, config, skills, timer, replays.faults, policy.vision is not None)
                except EnvironmentCrashedError as error:
                    progress.update(0 if replays.requeue(queue, (order, task, episode_id), 0, error) else 1)
                    continue
                live.append((order, episode, []))
            if not live:
                continue
            tick = time.perf_counter()
            episodes = [episode for _, episode, _ in live]
            generations, calls = _generate_turn(policy, episodes, config, sampling, generator, timer)
            timer.generation += time.perf_counter() - tick

            still_live = []
            for (order, episode, samples), generation, step_calls in zip(live, generations, calls):
                sample = generation.sample
                timer.generated_tokens += len(sample.response_ids)
                timer.prompt_tokens += len(sample.prompt_ids)
                timer.truncated_prompts += int(sample.truncated_tokens > 0)
                constrained_row = sample.allowed_ids is not None
                action = generation.text if constrained_row else parse_action(generation.text)
                tick = time.perf_counter()
                try:
                    episode.play(
                        action,
                        generation.text,
                        source=source,
                        policy_version=policy_version,
                        response_logprobs=sample.old_logprobs.tolist(),
                    )
                except EnvironmentCrashedError as error:
                    restart_env(pool, episode.env, replays.faults)
                    timer.environment += time.perf_counter() - tick
                    item = (order, episode.task, episode.episode_id)
                    progress.update(0 if replays.requeue(queue, item, episode.step, error) else 1)
                    continue
                timer.environment += time.perf_counter() - tick
                episode.rows[-1][CALLS_COLUMN] = step_calls
                steps_done += 1
                identity = {"episode_id": episode.episode_id, "group_id": episode.group_id, "step": episode.step - 1}
                samples.append(dataclasses.replace(sample, **identity))
                if episode.done:
                    episode.context = None  # its KV cache
                    pool.release(episode.env)
                    finished.append((order, episode, samples))
                    progress.update(1)
                else:
                    still_live.append((order, episode, samples))
            live = still_live
            elapsed = time.perf_counter() - loop_started
            progress.set_postfix(live=len(live), steps_per_s=f"{steps_done / max(elapsed, 1e-9):.1f}", refresh=False)
    except BaseException:
        for _, episode, _ in live:
            pool.discard(episode.env)
        raise
    finally:
        progress.close()
    return finished


def _generate_turn(policy: Policy, episodes: list[Episode], config, sampling, generator, timer) -> tuple[list, list[int]]:
    """One batched generation for the live episodes (step 2 of the module docstring): the
    generations and each step's in-response world-model calls (0 without imagination)."""
    if config.imagination is not None:
        return generate_with_imagination(policy, episodes, sampling, generator, config.imagination)
    if config.layout == "multiturn":
        generations, reprefills = multiturn_generations(policy, episodes, config.prompt, sampling, generator)
        timer.context_reprefills += reprefills
    else:
        valid_actions = [episode.valid_actions for episode in episodes] if config.sampling.constrained else None
        prompts = [episode.prompt() for episode in episodes]
        if policy.vision is not None:  # the torch engine (check_vision_rollout), each prompt with its screen
            images = [screen_image(policy, episode.screen) for episode in episodes]
            generations = generate(policy, prompts, config=sampling, valid_actions=valid_actions, generator=generator, images=images)
        else:
            generations = config.inference_backend().generate(policy, prompts, config=sampling, valid_actions=valid_actions, generator=generator)
    return generations, [0] * len(episodes)


def _start_episode(pool, task, episode_id, config, skills, timer, faults, sees: bool = False) -> Episode:
    """Start the episode on a pooled environment (``EnvironmentCrashedError``: the
    environment failed it twice, ``replay.start_episode``)."""
    max_steps = config.max_steps if config.max_steps is not None else task.spec.max_steps
    skill = skills.get(episode_id, skills.get(task.group_id))

    def build(env) -> Episode:
        return Episode(
            episode_id=episode_id, task=task, env=env, max_steps=int(max_steps), prompt_config=config.prompt, skill=skill,
            sees=sees,
        )

    tick = time.perf_counter()
    try:
        return start_episode(pool, task, episode_id, build, faults)
    finally:
        timer.environment += time.perf_counter() - tick

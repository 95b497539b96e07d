"""Nodes of the world-model stage and of WM-R1 training (docs/fidelity.md, WM-R1).

World model: examples from the trajectories (and the base policy's rollouts, random episodes
on the real environment when ``world_model.random_episodes_per_game`` asks, and the start
policy's own real episodes when ``world_model.policy_episodes`` asks: ``calibration_nodes``),
a model (a local HF directory, or the embedded Qwen2 with a tokenizer trained on the examples),
SFT on the training episodes, then exact match and token accuracy on held-out episodes.
WM-R1: the policy is trained by GRPO inside the world model (``training.rl.algorithm:
wmr1``); its held-out evaluation, like the evaluation pipeline's, is on the real environment.
"""

from __future__ import annotations

import dataclasses
import logging

import pandas as pd

from hindsight import tracking
from hindsight.config import ProjectConfig, TrainingConfig, WorldModelConfig, rl_setup
from hindsight.envs import make_env
from hindsight.world_model.environment import RecordedTasks, WorldModelSimulator
from hindsight.params import as_dict
from hindsight.policy import Policy
from hindsight.policy.model import build_policy, count_parameters, load_policy
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.runs.rl_run import run_rl
from hindsight.rollout.live_episode import TABLE_COLUMNS
from hindsight.rollout.random_agent import run_random_agent
from hindsight.rollout.tasks import split_tasks
from hindsight.training.checkpoint import checkpoint_directory, weights_fingerprint
from hindsight.training.sft import train_sft
from hindsight.world_model.quality import heldout_quality
from hindsight.rollout.policy_episodes import episode_sources, learnt_episodes
from hindsight.world_model.transitions import FAILED_MARKER, SOLVED_MARKER, transition_examples

logger = logging.getLogger(__name__)


def explore_for_world_model(project: ProjectConfig, settings: WorldModelConfig) -> pd.DataFrame:
    """``world_model.random_episodes_per_game`` random-valid-action episodes per game on the
    real environment (the first train-fold tasks, one episode each): a trajectory table
    (``rollout.live_episode.TABLE_COLUMNS``), empty when the setting is 0."""
    if not settings.random_episodes_per_game:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    tasks = [task for spec in project.specs() for task in split_tasks(spec, "train", settings.random_episodes_per_game)]
    result = run_random_agent(make_env, tasks, seed=project.seeds.rollouts, prompt=project.rollout.prompt)
    table = result.table
    won = table.groupby("episode_id", sort=False)["won"].any()
    tracking.log_metrics({
        "world_model/exploration_episodes": float(len(won)),
        "world_model/exploration_success_rate": float(won.mean()) if len(won) else 0.0,
    })
    logger.info("World model: %d random episodes played for its examples (%d won)", len(won), int(won.sum()))
    return table


def world_model_episodes(
    trajectories: pd.DataFrame, skill_rollouts: pd.DataFrame, exploration: pd.DataFrame, policy_episodes: pd.DataFrame, settings: WorldModelConfig
) -> pd.DataFrame:
    """Every real episode the world model sees, by source (``rollout.policy_episodes``): the
    gold ``trajectories`` (``gold_share``), the skills stage's rollouts (``use_rollouts``),
    the random exploration and the start policy's own episodes (``policy_episodes.trained_share``;
    the held-out episodes of every source are always kept, to be scored)."""
    empty = trajectories.head(0)
    return learnt_episodes(
        gold=trajectories, rollouts=skill_rollouts if settings.use_rollouts else empty, random=exploration, policy=policy_episodes,
        gold_share=settings.gold_share, policy_share=settings.policy_episodes.trained_share, heldout_fraction=settings.heldout_fraction,
    )


def world_model_examples(episodes: pd.DataFrame, project: ProjectConfig, settings: WorldModelConfig) -> pd.DataFrame:
    """(prompt, response = next observation or outcome) examples of every episode the world
    model sees (``world_model_episodes``), held-out ones marked, each with its source
    (``expert``, ``rollout``, ``random``, ``policy``: ``rollout.policy_episodes.episode_sources``).

    Returns:
        ``world_model.transitions.EXAMPLE_COLUMNS``.
    """
    examples = transition_examples(
        episodes, history=settings.query.history, max_chars=settings.query.max_observation_chars,
        heldout_fraction=settings.heldout_fraction, max_steps=project.environment.max_steps,
    )
    examples = examples.assign(source=episode_sources(examples))
    heldout = int(examples["heldout"].sum())
    train = examples[~examples["heldout"]]
    logger.info("World model: %d training and %d held-out transitions", len(train), heldout)
    metrics = {
        "world_model/train_examples": float(len(train)), "world_model/heldout_examples_total": float(heldout),
        "world_model/train_solved_endings": float((train["response"] == SOLVED_MARKER).sum()),
        "world_model/train_failed_endings": float((train["response"] == FAILED_MARKER).sum()),
    }
    metrics.update({f"world_model/train_examples/{source}": float(count) for source, count in train["source"].value_counts().items()})
    tracking.log_metrics(metrics)
    return examples


def build_world_model(examples: pd.DataFrame, project: ProjectConfig, settings: WorldModelConfig):
    """The untrained world model: ``model.model_dir`` loaded, or the embedded Qwen2 of
    ``model.preset`` with a BPE tokenizer trained on the examples."""
    model = settings.model
    if model.from_pretrained_model:
        raise ValueError("world_model.model.from_pretrained_model is not supported: set world_model.model.model_dir to a local HF directory")
    if model.model_dir:
        return load_policy(model.model_dir, lora=model.lora, dtype=model.dtype)
    tokenizer = train_tokenizer(examples["prompt"].tolist() + examples["response"].tolist(), vocab_size=model.vocab_size)
    world_model = build_policy(model.preset, tokenizer, seed=project.seeds.model, architecture=model.architecture)
    tracking.log_metrics({"world_model/parameters": float(count_parameters(world_model.model))})
    return world_model


def train_world_model(world_model: Policy, examples: pd.DataFrame, project: ProjectConfig, settings: WorldModelConfig):
    """SFT on the training episodes' transitions (solved steps ``terminal_repeat`` times);
    returns the world model and its loss history."""
    train = examples[~examples["heldout"]]
    if train.empty:
        raise ValueError("world model: every episode is held out (lower world_model.heldout_fraction)")
    train = pd.concat([train] + [train[train["terminal"]]] * (settings.terminal_repeat - 1), ignore_index=True)

    def log(metrics, step):
        tracking.log_metrics({f"world_model/{key}": value for key, value in metrics.items()}, step=step)

    history = train_sft(world_model, train, settings.sft, log, seed=project.seeds.examples)
    return world_model, history.assign(phase="world_model")


def evaluate_world_model(world_model: Policy, examples: pd.DataFrame, settings: WorldModelConfig) -> pd.DataFrame:
    """Held-out next-observation exact match and token accuracy (table + MLflow metrics)."""
    table, metrics = heldout_quality(
        world_model, examples, max_new_tokens=settings.query.max_new_tokens, max_length=settings.sft.max_length,
        max_examples=settings.heldout_max_examples,
    )
    tracking.log_metrics(metrics)
    logger.info("World model held out: %s", {key: round(value, 3) for key, value in metrics.items()})
    return table


def world_model_simulator(
    world_model: Policy, trajectories: pd.DataFrame, skill_rollouts: pd.DataFrame, settings: WorldModelConfig
) -> WorldModelSimulator:
    """The world model with the recorded tasks it starts from: their first observations,
    recorded states (valid actions) and won episodes (replays), from the trajectories and,
    with ``use_rollouts``, the skills stage's rollouts (the data the world model learnt from)."""
    tasks = RecordedTasks(settings.recorded_episodes(trajectories, skill_rollouts))
    return WorldModelSimulator(world_model=world_model, tasks=tasks, settings=settings.query_settings())


def train_in_world_model(stage1_policy: Policy, base_policy: Policy, simulator: WorldModelSimulator, project: ProjectConfig, training: TrainingConfig):
    """WM-R1: GRPO inside the world model from ``training.start_from``; held-out evaluation
    (``training.rl.eval_every``) on the real environment. This pipeline always trains WM-R1
    (``training.rl.algorithm`` is set to ``wmr1``; the other RL settings apply as given).

    Returns:
        (trained policy, per-update history, last rollout table incl. replayed episodes).
    """
    if training.rl.algorithm != "wmr1":
        logger.info("The wmr1 pipeline trains with training.rl.algorithm=wmr1 (the settings say %r)", training.rl.algorithm)
    training = dataclasses.replace(training, rl=dataclasses.replace(training.rl, algorithm="wmr1"))
    start = {"stage1": stage1_policy, "base": base_policy}[training.start_from]
    setup = rl_setup(project, training)
    settings = {"project": as_dict(project), "training": as_dict(training), "world_model": weights_fingerprint(simulator.world_model.model)}
    checkpoints = checkpoint_directory(training.checkpoint_root, settings, start.model)
    logger.info("WM-R1 checkpoints in %s", checkpoints)
    result = run_rl(
        start, training.rl, setup, checkpoints, seed=project.seeds.rollouts,
        log_metrics=lambda metrics, step: tracking.log_metrics(metrics, step=step), world_model=simulator,
    )
    result.policy.version = training.rl.updates
    return result.policy, result.history, result.last_rollout

"""Nodes of the behaviour-cloning stage: the SFT set of expert steps, the policy before any
training, and behaviour cloning -> the base policy (where the "without Stage 1" ablation
starts)."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from hindsight import tracking
from hindsight.data.outcomes import episode_outcomes
from hindsight.config import BehaviourCloningConfig, ProjectConfig
from hindsight.policy import Policy
from hindsight.policy.model import build_policy, count_parameters, load_policy
from hindsight.policy.prompts import episode_prompts
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.training.episode_sft import TurnBudget, multiturn_examples
from hindsight.training.sft import train_sft

logger = logging.getLogger(__name__)


def _training_episodes(trajectories: pd.DataFrame) -> pd.DataFrame:
    """Steps of successful episodes of the train fold (behaviour-cloning data)."""
    train = trajectories[trajectories["split"] == "train"]
    outcomes = episode_outcomes(train)
    won = set(outcomes.loc[outcomes["success"], "episode_id"])
    return train[train["episode_id"].isin(won)].sort_values(["episode_id", "step"])


def behaviour_cloning_examples(trajectories: pd.DataFrame, project: ProjectConfig) -> pd.DataFrame:
    """One example per expert step of a successful training episode, in the rollout's layout.

    Step-wise: a (prompt, response) pair per step (the step prompt with its history window).
    Multi-turn (``rollout.layout: multiturn``): the step's observation segment as ``prompt``,
    plus the episode's ``header``, its ``sequence`` key and the step's ``valid_actions``
    (``training.episode_sft``): SFT trains on each episode as one token sequence, as the
    engine will show it.

    Args:
        trajectories: The trajectory table.
        project: The shared settings (layout, how a step prompt or segment is built).

    Returns:
        Columns episode_id, group_id, task_type, step, prompt, response, kind="bc",
        valid_actions (and the rest of ``episode_sft.MULTITURN_COLUMNS`` in the multi-turn
        layout).
    """
    episodes = _training_episodes(trajectories)
    if project.rollout.layout == "multiturn":
        if episodes.empty:
            raise ValueError("no successful train-fold episodes in 'trajectories' to behaviour-clone")
        return multiturn_examples(episodes, project.rollout.prompt)
    rows = []
    for episode_id, episode in episodes.groupby("episode_id", sort=False):
        prompts = episode_prompts(
            episode["task"].iloc[0],
            episode["observation"].tolist(),
            episode["action"].tolist(),
            episode["valid_actions"].tolist(),
            project.rollout.prompt,
        )
        for (_, row), text in zip(episode.iterrows(), prompts):
            rows.append(
                {
                    "episode_id": episode_id,
                    "group_id": row["group_id"],
                    "task_type": row["task_type"],
                    "step": int(row["step"]),
                    "prompt": text,
                    "response": row["response"] or row["action"],
                    "kind": "bc",
                    "valid_actions": list(row["valid_actions"]),
                }
            )
    if not rows:
        raise ValueError("no successful train-fold episodes in 'trajectories' to behaviour-clone")
    return pd.DataFrame(rows)


def build_initial_policy(
    examples: pd.DataFrame, project: ProjectConfig, settings: BehaviourCloningConfig, pretrained_model: Path | None
):
    """The policy before any training: the catalog's pretrained model, a local HF directory,
    or the embedded tiny model.

    With ``policy.from_pretrained_model`` the newest ``pretrained_model`` version is loaded
    (``pretrained_model`` is its directory, None when that stage never ran); with
    ``policy.model_dir`` that directory. Either keeps its own tokenizer and chat template and
    gets the optional LoRA adapter of ``policy.lora``. Otherwise a BPE tokenizer is trained on
    the behaviour-cloning prompts and responses and a Qwen2 model of size ``policy.preset``
    is built (with a screenshot encoder under ``policy.vision``, docs/vision_policies.md).

    Raises:
        FileNotFoundError: ``from_pretrained_model`` is set and no ``pretrained_model``
            version exists (the message names the command that makes it).
    """
    policy_settings = settings.policy
    model_dir = policy_settings.model_dir
    if policy_settings.from_pretrained_model:
        return pretrained_policy(pretrained_model, settings)
    if model_dir:
        policy = load_policy(model_dir, lora=policy_settings.lora, dtype=policy_settings.dtype)
        tracking.log_metrics(
            {
                "warmup/parameters": count_parameters(policy.model),
                "warmup/trainable_parameters": count_parameters(policy.model, trainable_only=True),
                "warmup/vocab_size": len(policy.tokenizer),
            }
        )
        return policy
    texts = examples["prompt"].tolist() + examples["response"].tolist()
    if "header" in examples:  # multi-turn rows: the episode's header is read at every turn
        texts += examples["header"].dropna().tolist()
    tokenizer = train_tokenizer(texts, vocab_size=policy_settings.vocab_size)
    policy = build_policy(
        policy_settings.preset, tokenizer, seed=project.seeds.model, architecture=policy_settings.architecture,
        vision=policy_settings.vision,
    )
    tracking.log_metrics({"warmup/parameters": count_parameters(policy.model), "warmup/vocab_size": len(tokenizer)})
    return policy


def pretrained_policy(pretrained_model: Path | None, settings: BehaviourCloningConfig) -> Policy:
    """The newest ``pretrained_model`` version (``pretrained_model``: its directory, None when
    that stage never ran) as a policy, with ``policy.lora`` on it and in ``policy.dtype``:
    behaviour cloning's start on the pretrained route, and the zero-shot premise check's
    policy (``kedro run --pipeline premise_zero_shot``, no training at all).

    Raises:
        FileNotFoundError: No ``pretrained_model`` version exists (the message names the
            command that makes it).
    """
    if pretrained_model is None:
        raise FileNotFoundError(
            "the catalog holds no 'pretrained_model' (data/06_models/pretrained_model): convert it once with "
            "`kedro run --env <env> --pipeline pretrained_model` (docs/pretrained.md)"
        )
    policy_settings = settings.policy
    policy = load_policy(pretrained_model, lora=policy_settings.lora, dtype=policy_settings.dtype)
    tracking.log_metrics(
        {
            "warmup/parameters": count_parameters(policy.model),
            "warmup/trainable_parameters": count_parameters(policy.model, trainable_only=True),
            "warmup/vocab_size": len(policy.tokenizer),
        }
    )
    return policy


def log_prefixed(prefix: str):
    """A ``(metrics, step)`` sink logging to MLflow under ``prefix/``."""
    return lambda metrics, step: tracking.log_metrics({f"{prefix}/{k}": v for k, v in metrics.items()}, step=step)


def train_base_policy(
    policy: Policy, examples: pd.DataFrame, project: ProjectConfig, settings: BehaviourCloningConfig,
    screenshots: pd.DataFrame | None = None,
):
    """Behaviour cloning: the base policy, and its loss history (multi-turn examples are
    built into sequences by the rollout's context rule, ``TurnBudget``). A policy that sees
    reads each expert step's screen from ``screenshots`` (the catalog's, keyed by episode and
    step; a step without one is refused); a text policy ignores it."""
    history = train_sft(
        policy, examples, settings.sft, log_prefixed("bc"), seed=project.seeds.examples,
        turns=TurnBudget.of(project.rollout.sampling), screens=screenshots,
    )
    return policy, history.assign(phase="bc")

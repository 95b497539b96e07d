"""Nodes of the warm-up pipeline: build or load the policy, make the SFT sets, train.

The base policy is behaviour-cloned on successful expert episodes of the training fold.
Stage 1 continues from it on a mixture: the same behaviour cloning, skill-conditioned
behaviour cloning (expert steps with their episode's hindsight skill injected into the
prompt, so the policy learns to use a skill) and analyzer SFT (analysis prompt -> JSON, so
the policy can write skills). The Stage-1 checkpoint starts RL and is its KL reference.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from hindsight import tracking
from hindsight.config import prompt_config
from hindsight.policy.model import build_policy, count_parameters, load_policy
from hindsight.policy.prompts import episode_prompts
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.skills.injection import inject_skill
from hindsight.training.sft import SFTConfig, train_sft

logger = logging.getLogger(__name__)


def _training_episodes(trajectories: pd.DataFrame) -> pd.DataFrame:
    """Steps of successful episodes of the train fold (behaviour-cloning data)."""
    train = trajectories[trajectories["split"] == "train"]
    won = train.groupby("episode_id")["won"].transform("any")
    return train[won].sort_values(["episode_id", "step"])


def behaviour_cloning_examples(trajectories: pd.DataFrame, prompt: dict[str, Any]) -> pd.DataFrame:
    """One (prompt, response) example per expert step of a successful training episode.

    Args:
        trajectories: The trajectory table.
        prompt: The shared ``prompt`` parameters.

    Returns:
        Columns episode_id, group_id, task_type, step, prompt, response, kind="bc".
    """
    config = prompt_config(prompt)
    rows = []
    for episode_id, episode in _training_episodes(trajectories).groupby("episode_id", sort=False):
        prompts = episode_prompts(
            episode["task"].iloc[0],
            episode["observation"].tolist(),
            episode["action"].tolist(),
            episode["valid_actions"].tolist(),
            config,
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
                }
            )
    if not rows:
        raise ValueError("no successful train-fold episodes in 'trajectories' to behaviour-clone")
    return pd.DataFrame(rows)


def build_initial_policy(trajectories: pd.DataFrame, warmup: dict[str, Any], prompt: dict[str, Any], seed: int):
    """The policy before any training: a local HF directory, or the embedded tiny model.

    With ``warmup.model_dir`` set, that directory is loaded (its own tokenizer and chat
    template; optional LoRA from ``warmup.lora``). Otherwise a BPE tokenizer is trained on
    the training prompts and actions and a Qwen2 model of size ``warmup.preset`` is built.
    """
    if warmup.get("model_dir"):
        return load_policy(warmup["model_dir"], lora=warmup.get("lora"), dtype=warmup.get("dtype"))
    examples = behaviour_cloning_examples(trajectories, prompt)
    texts = examples["prompt"].tolist() + examples["response"].tolist()
    tokenizer = train_tokenizer(texts, vocab_size=int(warmup.get("vocab_size", 2048)))
    policy = build_policy(warmup.get("preset", "small"), tokenizer, seed=seed)
    tracking.log_metrics({"warmup/parameters": count_parameters(policy.model), "warmup/vocab_size": len(tokenizer)})
    return policy


def _log_prefixed(prefix: str):
    return lambda metrics, step: tracking.log_metrics({f"{prefix}/{k}": v for k, v in metrics.items()}, step=step)


def train_base_policy(policy, examples: pd.DataFrame, warmup: dict[str, Any]):
    """Behaviour cloning: the base policy (the "without Stage 1" ablation starts here)."""
    history = train_sft(policy, examples, SFTConfig.from_params(warmup.get("bc")), _log_prefixed("bc"))
    return policy, history.assign(phase="bc")


def stage1_examples(
    bc_examples: pd.DataFrame, skills: pd.DataFrame, analyzer_sft_set: pd.DataFrame, warmup: dict[str, Any]
) -> pd.DataFrame:
    """The Stage-1 mixture: behaviour cloning, skill-conditioned behaviour cloning, analyzer SFT.

    Skill-conditioned examples are the behaviour-cloning steps of every episode that has an
    accepted skill, with that skill injected into the prompt (ALGORITHMS.md injection).
    """
    accepted = skills[skills["accepted"] & skills["parse_ok"]].set_index("episode_id")["skill"]
    conditioned = bc_examples[bc_examples["episode_id"].isin(accepted.index)].copy()
    conditioned["prompt"] = [
        inject_skill(text, accepted[episode]) for text, episode in zip(conditioned["prompt"], conditioned["episode_id"])
    ]
    conditioned["kind"] = "skill_bc"
    analyzer = analyzer_sft_set.assign(kind="analyzer")
    repeat = int(warmup.get("analyzer_repeat", 1))
    parts = [bc_examples, conditioned] + [analyzer] * repeat
    mixture = pd.concat([part[["prompt", "response", "kind"]] for part in parts], ignore_index=True)
    counts = mixture["kind"].value_counts().to_dict()
    logger.info("Stage-1 mixture: %s", counts)
    tracking.log_metrics({f"stage1/examples_{kind}": n for kind, n in counts.items()})
    return mixture


def train_stage1_policy(base_policy, examples: pd.DataFrame, warmup: dict[str, Any]):
    """Stage 1 of SEED from the base policy: the checkpoint RL starts from."""
    history = train_sft(base_policy, examples, SFTConfig.from_params(warmup.get("stage1")), _log_prefixed("stage1"))
    return base_policy, history.assign(phase="stage1")


def combine_histories(bc_history: pd.DataFrame, stage1_history: pd.DataFrame) -> pd.DataFrame:
    """Both phases' loss curves in one table."""
    return pd.concat([bc_history, stage1_history], ignore_index=True)

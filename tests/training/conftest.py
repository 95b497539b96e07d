"""Shared fixtures of the trainer tests: real TextWorldExpress tasks, a tokenizer trained on
their gold episodes and a tiny policy built from a config (all built once per session).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass

import pandas as pd
import pytest
import torch

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout.tasks import make_tasks  # noqa: E402
from hindsight.training.sft import SFTConfig, train_sft  # noqa: E402

from episodes import gold_steps  # noqa: E402

TWC_PARAMS = {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}
TWC_SPEC = EnvironmentSpec("textworldexpress", "twc", TWC_PARAMS, max_steps=8)


@pytest.fixture(scope="session")
def twc_spec() -> EnvironmentSpec:
    """twc, one room, two items, 8 steps per episode."""
    return TWC_SPEC


@pytest.fixture(scope="session")
def gold_examples() -> list[dict]:
    """(prompt, response, valid_actions) of every step of 4 gold twc episodes."""
    steps = gold_steps(EnvironmentSpec("textworldexpress", "twc", TWC_PARAMS, max_steps=30), 4)
    return [{"prompt": s["prompt"], "response": s["action"], "valid_actions": s["valid_actions"]} for s in steps]


@pytest.fixture(scope="session")
def tokenizer(gold_examples):
    """A byte-level BPE tokenizer trained on the gold prompts and actions."""
    texts = [text for example in gold_examples for text in (example["prompt"], example["response"])]
    return train_tokenizer(texts, vocab_size=600)


@pytest.fixture(scope="session")
def start_policy(tokenizer):
    """The "tiny" preset, freshly initialised (seed 0), on CPU. Never trained: tests
    train ``fresh_policy()`` copies of it."""
    return build_policy("tiny", tokenizer, seed=0, device="cpu")


@dataclass
class BehaviourCloningRun:
    """A short SFT run on the gold steps, shared by the SFT test and the RL tests."""

    policy: object
    """The trained policy (tests must train copies of it, never it)."""
    weights_before: dict[str, torch.Tensor]
    """Every trainable parameter before training, by name."""
    history: pd.DataFrame
    """``train_sft``'s history, one row per step."""


BC_CONFIG = SFTConfig(
    learning_rate=3e-3, weight_decay=0.0, batch_size=8, max_steps=30, warmup_ratio=0.1, max_length=768, log_every=1
)
"""No weight decay: with AdamW a parameter then moves only if a gradient reached it."""


@pytest.fixture(scope="session")
def behaviour_cloning(start_policy, gold_examples) -> BehaviourCloningRun:
    """30 SFT steps of a copy of the starting policy on the gold steps: enough for it to win
    some twc episodes, so that RL updates have non-zero advantages."""
    policy = copy.deepcopy(start_policy)
    before = {name: p.detach().clone() for name, p in policy.model.named_parameters() if p.requires_grad}
    history = train_sft(policy, pd.DataFrame(gold_examples), BC_CONFIG)
    return BehaviourCloningRun(policy=policy, weights_before=before, history=history)


@pytest.fixture(scope="session")
def warm_policy(behaviour_cloning):
    """The behaviour-cloned policy (copy it before training it)."""
    return behaviour_cloning.policy


@pytest.fixture(scope="session")
def twc_tasks(twc_spec):
    """Three twc training tasks."""
    return make_tasks(twc_spec, "train", [0, 1, 2])

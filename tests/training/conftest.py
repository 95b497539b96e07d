"""Shared fixtures of the trainer tests: the gold twc steps as SFT examples and a short
behaviour-cloning run of the tiny policy (``tests/conftest.py``) on them, built once per
session.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import pandas as pd
import pytest
import torch

from hindsight.training.sft import SFTConfig, train_sft


@pytest.fixture(scope="session")
def gold_examples(gold_steps) -> list[dict]:
    """(prompt, response, valid_actions) of every gold twc step."""
    return [{"prompt": s["prompt"], "response": s["action"], "valid_actions": s["valid_actions"]} for s in gold_steps]


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
def behaviour_cloning(tiny_policy, gold_examples) -> BehaviourCloningRun:
    """30 SFT steps of a copy of the tiny policy on the gold steps: enough for it to win
    some twc episodes, so that RL updates have non-zero advantages."""
    policy = copy.deepcopy(tiny_policy)
    before = {name: p.detach().clone() for name, p in policy.model.named_parameters() if p.requires_grad}
    history = train_sft(policy, pd.DataFrame(gold_examples), BC_CONFIG)
    return BehaviourCloningRun(policy=policy, weights_before=before, history=history)


@pytest.fixture(scope="session")
def warm_policy(behaviour_cloning):
    """The behaviour-cloned policy (copy it before training it)."""
    return behaviour_cloning.policy

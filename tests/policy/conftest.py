"""Shared fixtures of the policy tests: gold TextWorldExpress steps, a tokenizer trained on
them and a tiny policy built from a config (all built once per session)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402

from episodes import gold_steps as gold_steps_of  # noqa: E402

TWC_SPEC = EnvironmentSpec(
    "textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=12
)


@pytest.fixture(scope="session")
def gold_steps() -> list[dict]:
    """Steps of 6 gold twc episodes (real environment)."""
    return gold_steps_of(TWC_SPEC, 6)


@pytest.fixture(scope="session")
def tokenizer(gold_steps):
    """A byte-level BPE tokenizer trained on the gold prompts and actions."""
    texts = [text for step in gold_steps for text in (step["prompt"], step["action"])]
    return train_tokenizer(texts, vocab_size=1024)


@pytest.fixture(scope="session")
def tiny_policy(tokenizer):
    """The "tiny" preset, freshly initialised (seed 0), on CPU."""
    return build_policy("tiny", tokenizer, seed=0, device="cpu")

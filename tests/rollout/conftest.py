"""Shared fixtures of the rollout tests: the real TextWorldExpress env factory, a tokenizer
trained on gold episodes and a tiny policy (built once per session)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout.tasks import make_tasks  # noqa: E402

from episodes import gold_steps  # noqa: E402

TWC_SPEC = EnvironmentSpec(
    "textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=8
)


@pytest.fixture(scope="session")
def twc_spec() -> EnvironmentSpec:
    """twc, one room, two items, 8 steps per episode."""
    return TWC_SPEC


@pytest.fixture(scope="session")
def rollout_tokenizer():
    """A tokenizer trained on the prompts and actions of 4 gold twc episodes."""
    texts = [text for step in gold_steps(TWC_SPEC, 4) for text in (step["prompt"], step["action"])]
    return train_tokenizer(texts, vocab_size=1024)


@pytest.fixture(scope="session")
def rollout_policy(rollout_tokenizer):
    """The "tiny" preset, freshly initialised, on CPU."""
    return build_policy("tiny", rollout_tokenizer, seed=0, device="cpu")


@pytest.fixture(scope="session")
def twc_tasks(twc_spec):
    """Three training tasks."""
    return make_tasks(twc_spec, "train", [0, 1, 2])

"""Fixtures for the whole suite: one thread for torch, and the real twc game with a tiny
policy built on its gold episodes (each built once per session, shared by every directory).

Torch runs on one intra-op thread: on a 2-core machine shared with other work, two OpenMP
threads per process oversubscribe the cores and the tiny models' small ops slow down many
times over (measured: the conf/test default pipeline took 45 s with one thread and 340 s
with two while another process kept the cores busy).
"""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout.tasks import make_tasks  # noqa: E402

from episodes import gold_steps as gold_steps_of  # noqa: E402

TWC_PARAMS = {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}
"""twc with one room and two items to put away: the game the policy, rollout and trainer
tests play."""

GOLD_EPISODES = 4
"""How many gold twc episodes the tokenizer is trained on (and the tests read)."""


@pytest.fixture(scope="session", autouse=True)
def single_torch_thread():
    """One intra-op thread for the whole session (restored afterwards)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def twc_spec() -> EnvironmentSpec:
    """twc, one room, two items, 8 steps per episode."""
    return EnvironmentSpec("textworldexpress", "twc", TWC_PARAMS, max_steps=8)


@pytest.fixture(scope="session")
def twc_tasks(twc_spec):
    """Three twc training tasks."""
    return make_tasks(twc_spec, "train", [0, 1, 2])


@pytest.fixture(scope="session")
def gold_steps(twc_spec) -> list[dict]:
    """(prompt, action, valid_actions) of every step of the first ``GOLD_EPISODES`` gold twc
    episodes of the train fold (real environment; the step limit does not cut them)."""
    return gold_steps_of(twc_spec, GOLD_EPISODES)


@pytest.fixture(scope="session")
def tokenizer(gold_steps):
    """A byte-level BPE tokenizer trained on the gold prompts and actions."""
    texts = [text for step in gold_steps for text in (step["prompt"], step["action"])]
    return train_tokenizer(texts, vocab_size=600)


@pytest.fixture(scope="session")
def tiny_policy(tokenizer):
    """The "tiny" preset, freshly initialised (seed 0), on CPU. Shared by the whole session:
    tests that train or change it work on a ``copy.deepcopy``."""
    return build_policy("tiny", tokenizer, seed=0, device="cpu")

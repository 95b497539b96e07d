"""Fixtures for the whole suite: one thread for torch, and the real twc game with a tiny
policy built on its gold episodes (each built once per session, shared by every directory);
and how the parallel run (``pytest -n 2 --dist loadfile``: two worker processes, one core
each) splits the files.

Torch runs on one intra-op thread: on a 2-core machine shared with other work, two OpenMP
threads per process oversubscribe the cores and the tiny models' small ops slow down many
times over (measured: the conf/test default pipeline took 45 s with one thread and 340 s
with two while another process kept the cores busy).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout.tasks import make_tasks  # noqa: E402

from episodes import gold_steps as gold_steps_of  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parents[1]

TWC_PARAMS = {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}
"""twc with one room and two items to put away: the game the policy, rollout and trainer
tests play."""

GOLD_EPISODES = 4
"""How many gold twc episodes the tokenizer is trained on (and the tests read)."""


SHARED_PROJECT_FIXTURE = "trained_project"
"""The session fixture that runs the whole default pipeline (tests/pipelines/conftest.py)."""


@functools.cache
def reads_shared_project(test_file: str) -> bool:
    """Whether a test file (a path relative to the project root) names the trained-project
    fixture: a text match, because xdist's scheduler runs in the controller process, which
    collects no test items (so no fixture names)."""
    return SHARED_PROJECT_FIXTURE in (PROJECT_ROOT / test_file).read_text()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``pytest -n 2 --dist loadfile`` (pytest-xdist, the README's test command): each test
    file runs whole on one worker (its module fixtures built once), and all the files that
    read the trained project run on one worker, so the default pipeline runs once. (xdist's
    own ``loadgroup`` marks do nothing under pytest 9: it renames a node id attribute that
    pytest 9 no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedProjectScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            test_file = nodeid.split("::", 1)[0]
            return SHARED_PROJECT_FIXTURE if reads_shared_project(test_file) else test_file

    return SharedProjectScheduling(config, log)


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

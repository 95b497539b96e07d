"""Fixtures for the whole suite: one thread for torch, the real twc game with a tiny policy
built on its gold episodes, and the trained project (``trained_project``: the default
pipeline on conf/test), each built once per worker and shared by every directory;
and how the parallel run (``pytest -n 2 --dist loadfile``: two worker processes, one core
each) splits the files: heaviest first, each worker with its own trained project.

Torch runs on one intra-op thread: on a 2-core machine shared with other work, two OpenMP
threads per process oversubscribe the cores and the tiny models' small ops slow down many
times over (measured: the conf/test default pipeline took 45 s with one thread and 340 s
with two while another process kept the cores busy).

The SQLite databases a test process opens through SQLAlchemy (every test project's MLflow
``mlflow.db``) skip the disk flush after each commit (``sqlite_without_flushes``): MLflow
commits each parameter batch, tag and metric on its own, and a new database's schema
migrations commit about 1,100 times, so the conf/test default pipeline in a fresh project
flushed 1,924 times. Without the flushes it took 153 s instead of 171 s, and the three
ingestion test files 119 s instead of 142 s (both pairs side by side on 2 shared cores). What
a run writes and reads back is the same; only a machine crash could lose a test database's
last commits.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout.tasks import make_tasks  # noqa: E402

from episodes import gold_steps as gold_steps_of  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "pipelines"))
from kedro_project import KedroProject, RunRecord  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parents[1]

TWC_PARAMS = {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}
"""twc with one room and two items to put away: the game the policy, rollout and trainer
tests play."""

GOLD_EPISODES = 4
"""How many gold twc episodes the tokenizer is trained on (and the tests read)."""


def _no_flushes(dbapi_connection, _connection_record) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.execute("PRAGMA synchronous=OFF")


def sqlite_without_flushes() -> None:
    """``PRAGMA synchronous=OFF`` on every SQLite connection SQLAlchemy opens in this process
    from now on (MLflow's tracking store included): commits are not flushed to disk one by one."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if not event.contains(Engine, "connect", _no_flushes):
        event.listen(Engine, "connect", _no_flushes)


sqlite_without_flushes()


SHARED_STAGE_FIXTURES = ("world_model_run", "state2state_run", "experiment_grid")
"""Session fixtures that run a stage on the trained project (tests/pipelines/conftest.py):
the files that read them run on one worker, so each stage runs once (the world model, the
State2State checkpoint, and the one experiment grid that the grid tests share)."""

HEAVIEST_FIRST = [
    # Work units by their measured worker seconds in one session of every tier (``python -m
    # pytest -n 2 --dist loadfile -m '' --durations=0``), slowest first: handed out first, so
    # that the two workers end together instead of one starting the slowest file last. The
    # README's command (``-m 'not slow'``) keeps the same order for the files it selects.
    "shared stages",  # the trained project, the world model, State2State, the grid (11 cells), its Ray run: ~270 s
    "tests/pipelines/test_pipeline_miniwob.py",  # ~150 s: the tiny MiniWoB++ job in Chromium, then WM-R1
    "tests/benchmarks/test_smoke_processes.py",  # ~150 s: Ray, torchrun, JVMs, Chromium started by the scripts
    "tests/training/test_async_rollouts.py",
    "tests/benchmarks/test_smoke_pipelines.py",
    "tests/training/test_distributed.py",
    "tests/reliability/test_rollout_worker_faults.py",
    "tests/envs/test_gym.py",
    "tests/reliability/test_kill_resume.py",
    "tests/experiments/test_grid_ray_cluster.py",
    "tests/envs/test_miniwob_env.py",
    "tests/stage1/test_premise_pieces.py",
    "tests/reliability/test_bad_input_catalog.py",
    "tests/training/test_rl_resume.py",
    "tests/training/test_async_schedulers.py",
    "tests/envs/test_gym_miniwob_ids.py",
    "tests/training/test_gui_schedulers.py",
    "tests/training/test_rl_schedulers_resume.py",
    "tests/envs/test_miniwob_lifetime_browsers.py",
    "tests/pipelines/test_pipeline_pretrained.py",
    "tests/world_model/test_world_model_env.py",
    "tests/envs/test_miniwob_solvers.py",
    "tests/reliability/test_env_faults.py",
]


@functools.cache
def work_unit(test_file: str) -> str:
    """The scheduling unit of a test file (a path relative to the project root): "shared
    stages" for the files that read a shared-stage fixture (a text match, because xdist's
    scheduler runs in the controller process, which collects no test items and so knows no
    fixture names), else the file itself."""
    text = (PROJECT_ROOT / test_file).read_text()
    return "shared stages" if any(name in text for name in SHARED_STAGE_FIXTURES) else test_file


def pytest_collection_modifyitems(session, config, items):
    """Heaviest work units first (``HEAVIEST_FIRST``), the rest in collection order; the same
    order in every worker, as xdist requires."""
    rank = {unit: index for index, unit in enumerate(HEAVIEST_FIRST)}

    def key(item):
        unit = work_unit(item.nodeid.split("::", 1)[0])
        return rank.get(unit, len(rank))

    items.sort(key=key)  # stable: a file's tests keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``pytest -n 2 --dist loadfile`` (pytest-xdist, the README's test command): each test
    file runs whole on one worker (its module fixtures built once), the files of a shared
    stage together, heaviest first. Each worker builds the trained default project
    (``trained_project``, a session fixture) the first time one of its files reads it: two
    builds of about a minute, against one worker running every file that reads it.
    (xdist's own ``loadgroup`` marks do nothing under pytest 9: it renames a node id
    attribute that pytest 9 no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # keep HEAVIEST_FIRST's order, not the test counts'

    class HeaviestFirstScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid.split("::", 1)[0])

    return HeaviestFirstScheduling(config, log)


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


@pytest.fixture(scope="session")
def trained_project(tmp_path_factory) -> tuple[KedroProject, RunRecord]:
    """The whole default pipeline (ingestion -> behaviour_cloning -> skills -> stage1 ->
    training -> evaluation) run once per worker on ``conf/test`` in a fresh project
    (``tests/pipelines/kedro_project.py``). A test that runs a stage with settings of its own
    works on ``KedroProject.copy_of(trained_project[0], tmp_path)``; the benchmarks' smoke
    tests start their Kedro runs from such a copy too."""
    project = KedroProject(tmp_path_factory.mktemp("trained_project"))
    record = project.run()
    return project, record

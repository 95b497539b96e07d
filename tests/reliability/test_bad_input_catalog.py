"""Bad input through real Kedro sessions: a malformed external trajectory file stops the
ingestion run with its own message, writes no dataset version, and the version before it
still loads through the catalog.

One isolated project (``tests/pipelines/kedro_project.py``, conf env ``test``, one expert
episode per game) ingests a good external file once. Then EVERY file of
``tests/data/malformed`` goes through a session of its own, named after the good file in
``ingestion.external_files``, run as

    kedro run --env test --pipeline ingestion --from-nodes ingestion.load_external_trajectories

i.e. every ingestion node that saves a versioned dataset runs; only the two settings nodes
are left out (``SettingsHooks`` builds their settings from the same parameters). That keeps
a failed session near 0.5 s here instead of ~2 s (the memory-release hook collects garbage
after each settings node), so all the files fit in the time budget. A few files, one per
format, also go through the whole pipeline. The version folders under ``data/`` are
compared before and after each run (empty folders count too).

The helpers (``ingest``, ``version_dirs``, ``names_the_problem``, ``load_newest``) are used
by ``benchmarks/reliability_inputs.py`` as well.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

TESTS = Path(__file__).resolve().parents[1]
for _helpers in (TESTS / "data", TESTS / "pipelines"):  # kedro_project, the corpus expectations
    if str(_helpers) not in sys.path:
        sys.path.insert(0, str(_helpers))

from kedro_project import VERSION_PATTERN, KedroProject  # noqa: E402
from test_data_external import EXAMPLES, EXPECTED_ERRORS, FILE_LEVEL, MALFORMED, NO_FIELD  # noqa: E402

from hindsight.data import TrajectoryValidationError  # noqa: E402

pytestmark = pytest.mark.pipeline

GOOD_FILE = EXAMPLES / "sharegpt_alfworld.json"
EXPERT_EPISODES = {"train": 1, "dev": 0, "test": 0}
FROM_EXTERNAL = ["ingestion.load_external_trajectories"]
VERSIONED = {
    "expert_trajectories": "03_primary/expert_trajectories.parquet",
    "external_trajectories": "03_primary/external_trajectories.parquet",
    "trajectories": "03_primary/trajectories.parquet",
    "episode_summary": "03_primary/episode_summary.parquet",
    "screenshots": "03_primary/screenshots.parquet",
}
"""The versioned outputs of the ingestion pipeline: catalog name -> data folder."""
WHOLE_PIPELINE = ["wrong_type_step.jsonl", "corrupt.parquet", "no_assistant_turn.jsonl"]
"""One malformed file per format (JSON lines rows, parquet, conversations) also runs the
whole ingestion pipeline, settings nodes included."""


def version_dirs(project: KedroProject) -> set[str]:
    """Every version folder under the project's ``data/`` (``"layer/dataset/version"``),
    empty ones included."""
    data = project.path / "data"
    return {str(path.relative_to(data)) for path in data.glob("*/*/*") if path.is_dir() and VERSION_PATTERN.match(path.name)}


def ingest(project: KedroProject, files: list[Path], whole: bool = False):
    """One session of the ingestion pipeline with ``files`` as ``ingestion.external_files``
    (from the external-file node on, or ``whole``); exceptions of the run propagate."""
    params = {"ingestion": {"external_files": [str(path) for path in files], "expert_episodes": EXPERT_EPISODES}}
    options = {} if whole else {"from_nodes": FROM_EXTERNAL}
    return project.run(pipeline_names=["ingestion"], runtime_params=params, **options)


def names_the_problem(name: str, message: str) -> bool:
    """The message names the file, the line / item / row (unless the whole file is wrong),
    the field (where one applies), and holds the corpus's expected pieces for this file."""
    if name not in message or not all(piece in message for piece in EXPECTED_ERRORS[name]):
        return False
    if name not in FILE_LEVEL and not re.search(r", (line|item|row) \d+", message):
        return False
    return name in FILE_LEVEL | NO_FIELD or re.search(r", field '\w+'", message) is not None


def load_newest(project: KedroProject, names) -> dict[str, pd.DataFrame]:
    """``catalog.load`` of each dataset (its newest version) in a fresh session of the project."""
    from kedro.framework.session import KedroSession
    from kedro.framework.startup import bootstrap_project

    saved_path = list(sys.path)
    try:
        with contextlib.chdir(project.path):
            bootstrap_project(project.path)
            with KedroSession.create(project_path=project.path, env="test") as session:
                catalog = session.load_context().catalog
                return {name: catalog.load(name) for name in names}
    finally:
        sys.path[:] = saved_path


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """A project where ingestion ran once with a good external file: the project, what that
    run wrote, and the version folders after it."""
    project = KedroProject(tmp_path_factory.mktemp("bad_input_project"))
    record = ingest(project, [GOOD_FILE], whole=True)
    return project, record, version_dirs(project)


def test_the_sessions_from_the_external_node_leave_out_only_the_settings_nodes():
    """What makes the per-file sessions stand for whole runs: every node that saves a
    dataset lies downstream of the external-file node (the expert collection waits for it)."""
    from hindsight.pipeline_registry import register_pipelines

    pipeline = register_pipelines()["ingestion"]
    left_out = set(pipeline.nodes) - set(pipeline.from_nodes(*FROM_EXTERNAL).nodes)
    assert left_out and all(output.endswith("_settings") for node in left_out for output in node.outputs)
    assert set(VERSIONED) <= pipeline.from_nodes(*FROM_EXTERNAL).all_outputs()


def test_the_good_run_wrote_every_versioned_output(ingested):
    project, record, versions = ingested
    assert set(record.outputs) == set(VERSIONED.values())
    assert len(versions) == len(VERSIONED)
    table = pd.read_parquet(record.outputs[VERSIONED["trajectories"]])
    assert set(table["env"]) == {"textworldexpress", "external"}
    files = [path for path in MALFORMED.iterdir() if path.is_file()]  # gui/ holds the GUI corpus (tests/pipelines/test_pipeline_gui_ingestion.py)
    assert len(files) - 1 == len(EXPECTED_ERRORS) >= 32  # its README.md aside


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_a_malformed_file_stops_the_run_and_writes_no_version(ingested, name):
    project, _, versions = ingested
    with pytest.raises(TrajectoryValidationError) as failure:
        ingest(project, [GOOD_FILE, MALFORMED / name])
    assert names_the_problem(name, str(failure.value)), str(failure.value)
    assert version_dirs(project) == versions
    assert project.last_record.outputs == {}


@pytest.mark.parametrize("name", WHOLE_PIPELINE)
def test_the_whole_pipeline_fails_the_same_way(ingested, name):
    project, _, versions = ingested
    with pytest.raises(TrajectoryValidationError) as failure:
        ingest(project, [MALFORMED / name], whole=True)
    assert names_the_problem(name, str(failure.value)), str(failure.value)
    assert version_dirs(project) == versions
    assert project.mlflow_runs()[-1].info.status == "FAILED"


def test_the_same_episode_in_two_files_names_both(ingested, tmp_path):
    project, _, versions = ingested
    copy = tmp_path / "elsewhere" / GOOD_FILE.name  # same stem: the same episode ids
    copy.parent.mkdir()
    shutil.copy(GOOD_FILE, copy)
    with pytest.raises(TrajectoryValidationError) as failure:
        ingest(project, [GOOD_FILE, copy])
    message = str(failure.value)
    assert message.startswith(str(copy)) and f"is also in {GOOD_FILE}" in message, message
    assert "field 'episode_id'" in message and "external/sharegpt_alfworld/alfworld_0" in message
    assert version_dirs(project) == versions


def test_external_rows_that_reuse_an_expert_episode_id_write_nothing(ingested, tmp_path):
    """The clash shows only once the experts are collected: the versioned tables are saved
    after that check, so even this late failure leaves no version behind."""
    project, record, versions = ingested
    experts = pd.read_parquet(record.outputs[VERSIONED["expert_trajectories"]])
    episode = experts[experts["episode_id"] == experts["episode_id"].iloc[0]]
    rows = [{**row, "valid_actions": list(row["valid_actions"])} for row in episode.to_dict("records")]
    path = tmp_path / "stolen_ids.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(ValueError, match="reuse expert episode ids"):
        ingest(project, [path])
    assert version_dirs(project) == versions


def test_the_version_before_the_bad_runs_still_loads_through_the_catalog(ingested):
    """Runs last (file order): after every failed run above, a fresh session's catalog
    loads the good run's tables as the newest versions."""
    project, record, versions = ingested
    assert version_dirs(project) == versions
    loaded = load_newest(project, VERSIONED)
    for name, folder in VERSIONED.items():
        pd.testing.assert_frame_equal(loaded[name], pd.read_parquet(record.outputs[folder]), obj=name)
    assert (loaded["trajectories"]["env"] == "external").sum() == 4  # the good file's steps

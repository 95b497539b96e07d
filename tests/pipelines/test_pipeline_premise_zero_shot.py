"""``kedro run --pipeline premise_zero_shot`` through ``KedroSession``: Stage 1's premise check
on the catalog's pretrained model as it is (no behaviour cloning, skills stage or Stage 1),
in pieces kept under ``stage1.premise_pieces_dir``; a second run of the same command finds
every piece and writes the same tables without playing or scoring again.

The pretrained model is the tiny llama written as a GGUF file in SmolLM2-135M-Instruct's
layout (``tiny_gguf``), imported by ``kedro run --pipeline pretrained_model``, as the
pretrained route's test does (``conf/hidden_rooms_135m`` runs it on the real SmolLM2).
"""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.pipeline_registry import register_pipelines
from kedro_project import KedroProject
from tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.pipeline

ZERO_SHOT = {"stage1": {"premise_tasks_per_game": 2, "premise_tasks_per_piece": 1, "premise_copy_pairs": 20}}
"""conf/test's two games, 2 held-out tasks each: 4 pieces of one task."""
PIECES = "data/07_model_output/premise_pieces"


@pytest.fixture(scope="module")
def zero_shot_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("premise_zero_shot")
    source = root / "tiny.gguf"
    write_tiny_gguf(source)
    project = KedroProject(root / "project")
    project.run(pipeline_names=["pretrained_model"], runtime_params={"pretrained_model": {"gguf_path": str(source)}})
    first = project.run(pipeline_names=["premise_zero_shot"], runtime_params=ZERO_SHOT)
    pieces = {path.name: path.stat().st_mtime_ns for path in (project.path / PIECES).rglob("*.pkl")}
    second = project.run(pipeline_names=["premise_zero_shot"], runtime_params=ZERO_SHOT)
    return project, first, pieces, second


def test_the_pipeline_is_the_pretrained_model_and_the_premise_node_only():
    pipeline = register_pipelines()["premise_zero_shot"]
    assert "stage1.check_skill_premise" in {node.name for node in pipeline.nodes}
    assert pipeline.inputs() & {"pretrained_model@path"} and not pipeline.inputs() & {"stage1_policy", "base_policy"}
    assert pipeline.outputs() == {"zero_shot_premise", "zero_shot_premise_summary", "zero_shot_premise_ranking"}


def test_the_zero_shot_check_writes_its_tables_and_trains_nothing(zero_shot_runs):
    _, first, pieces, _ = zero_shot_runs
    assert set(first.outputs) == {
        "08_reporting/zero_shot_premise.parquet", "08_reporting/zero_shot_premise_summary.csv",
        "08_reporting/zero_shot_premise_ranking.csv",
    }
    table = pd.read_parquet(first.outputs["08_reporting/zero_shot_premise.parquet"])
    assert (table["tokens"] > 0).all() and {"own", "rule"} <= set(table["skill_source"])
    assert len(table[table["skill_source"] == "own"]) == 4  # every held-out task's episode, own skill parsed
    summary = pd.read_csv(first.outputs["08_reporting/zero_shot_premise_summary.csv"])
    assert {"own", "rule", "own_minus_rule"} <= set(summary["skill_source"])  # each control paired with own too
    assert sorted(name.split("-")[0] for name in pieces) == ["play"] * 4 + ["rank"] * 4 + ["score"] * 4
    ranking = pd.read_csv(first.outputs["08_reporting/zero_shot_premise_ranking.csv"])
    # conf/test's games have no map: every episode's first step is labelled by the gold's first action, a proxy
    assert {"own", "rule"} <= set(ranking["skill_source"]) and ranking["note"].str.contains("proxy").all()
    metrics = first.mlflow_run.data.metrics
    assert metrics["stage1/premise/ranking/labels_exact"] == 0.0 and metrics["stage1/premise/ranking/steps"] >= 4
    assert "stage1/premise/own/all/gap_mean" in metrics and "warmup/trainable_parameters" in metrics
    assert metrics["warmup/trainable_parameters"] == metrics["warmup/parameters"]  # no adapter: the model as converted


def test_a_rerun_takes_every_piece_and_writes_the_same_tables(zero_shot_runs):
    project, first, pieces, second = zero_shot_runs
    assert {path.name: path.stat().st_mtime_ns for path in (project.path / PIECES).rglob("*.pkl")} == pieces
    for name in ("08_reporting/zero_shot_premise.parquet", "08_reporting/zero_shot_premise_summary.csv",
                 "08_reporting/zero_shot_premise_ranking.csv"):
        read = pd.read_parquet if name.endswith("parquet") else pd.read_csv
        pd.testing.assert_frame_equal(read(second.outputs[name]), read(first.outputs[name]))


BEHAVIOUR_CLONED = {
    "rollout": {"layout": "multiturn"},
    "behaviour_cloning": {
        "policy": {"from_pretrained_model": True, "lora": {"rank": 2, "alpha": 4, "target_modules": ["q_proj", "v_proj"]}},
        "sft": {"max_steps": 2, "batch_size": 2, "log_every": 1},
    },
    "stage1": {"premise_tasks_per_game": 1, "premise_tasks_per_piece": 1, "premise_copy_pairs": 10},
}
"""conf/hidden_rooms_135m_bc's shape at conf/test's size: an adapter cloned for 2 steps in the
multi-turn layout, then the premise on one held-out task per game."""


def test_the_behaviour_cloned_check_clones_with_an_adapter_then_checks_the_premise(tmp_path):
    pipeline = register_pipelines()["premise_behaviour_cloned"]
    assert {"behaviour_cloning.train_base_policy", "stage1.check_skill_premise"} <= {node.name for node in pipeline.nodes}
    assert not pipeline.inputs() & {"stage1_policy", "base_policy", "trajectories"}  # it writes what it reads
    source = tmp_path / "tiny.gguf"
    write_tiny_gguf(source)
    project = KedroProject(tmp_path / "project")
    project.run(pipeline_names=["pretrained_model"], runtime_params={"pretrained_model": {"gguf_path": str(source)}})
    record = project.run(pipeline_names=["premise_behaviour_cloned"], runtime_params=BEHAVIOUR_CLONED)
    assert {"08_reporting/behaviour_cloned_premise.parquet", "08_reporting/behaviour_cloned_premise_summary.csv", "06_models/base_policy"} <= set(record.outputs)
    history = pd.read_parquet(record.outputs["07_model_output/bc_history.parquet"])
    assert history["step"].max() == 2 and history["loss"].notna().all()
    table = pd.read_parquet(record.outputs["08_reporting/behaviour_cloned_premise.parquet"])
    assert len(table[table["skill_source"] == "own"]) == 2 and (table["tokens"] > 0).all()  # one task per game of conf/test
    metrics = record.mlflow_run.data.metrics
    assert 0 < metrics["warmup/trainable_parameters"] < metrics["warmup/parameters"]  # the adapter alone trains
    assert "stage1/premise/own/all/gap_mean" in metrics

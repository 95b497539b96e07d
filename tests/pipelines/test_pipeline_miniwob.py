"""``kedro run --env miniwob`` at a tiny size: the whole default pipeline (gold episodes with
their screens, behaviour cloning, skills, Stage 1 with the premise check, SEED, held-out
evaluation) on the job's MiniWoB++ task types and held-out task types in a real Chromium,
with conf/test's step budgets and one task per game and split, each played twice.

Marked slow (100-145 s on 2 shared cores at load 4-7; ``-m slow``, which CI runs); the job's
configuration itself is checked in ``tests/config/test_parameter_files.py``. It checks
what the job promises: every planned evaluation episode is in the table (per
agent, split and task type), the gold agent wins all of them, the report gives pass^1..2
by task type for random, gold, Stage-1 and SEED and SEED's mechanism figures, and no
browser process is left after the run. Then WM-R1 on the same project: the world model of
the page with its held-out scores per action type, and one update inside it."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hindsight.envs.miniwob import browser_pool
from hindsight.envs.miniwob.processes import marked_processes
from hindsight.world_model.transitions import FAILED_MARKER, ended_lost
from kedro_project import KedroProject

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]  # the whole pipeline on 12 task types in Chromium (`-m slow`, CI runs it)

ROOT = Path(__file__).resolve().parents[2]
JOB = yaml.safe_load((ROOT / "conf" / "miniwob" / "parameters.yml").read_text())
TRIALS = 2
TINY = {
    "environment": JOB["environment"],
    "rollout": {**yaml.safe_load((ROOT / "conf" / "test" / "parameters.yml").read_text())["rollout"], "prompt": JOB["rollout"]["prompt"]},
    "ingestion": {"expert_episodes": {"train": 2, "dev": 0, "test": 0}},
    "skills": {"tasks_per_game": 1, "rollouts_per_task": 2, "sampling": {"temperature": 0.4}, "teacher": "rule_miner",
               "validation": {"enabled": True, "rollouts": 2, "min_success_gain": 1, "min_rate_gain": 0.125},
               "analyzer_sft_from": "every_episode"},
    "evaluation": {
        "heldout": {"episodes_per_game": 1, "splits": ["seen", "unseen", "unseen_types"], "decodings": {"sampled": {"temperature": 0.4}},
                    "trials_per_task": TRIALS},
        "random_floor": True,
        "filmstrips": 1,
    },
}
"""conf/test with these blocks replaced whole: the job's task types, held-out task types, prompt
and browsers; conf/test's step budgets; one task per game and split, played TRIALS times."""
TRAINED = [game["game"] for game in JOB["environment"]["games"]]
HELD_OUT = [game["game"] for game in JOB["environment"]["heldout_games"]]
AGENTS = {"random", "gold", "stage1-sampled", "rl-sampled"}


@pytest.fixture(scope="module")
def miniwob_run(tmp_path_factory):
    project = KedroProject(tmp_path_factory.mktemp("miniwob_project"))
    test_parameters = project.path / "conf" / "test" / "parameters.yml"
    test_parameters.write_text(yaml.safe_dump({**yaml.safe_load(test_parameters.read_text()), **TINY}, sort_keys=False))
    before = browser_pool().settings
    record = project.run()
    assert browser_pool().settings == before  # idle_browsers: 1 held for the run only
    return record, project


def test_every_planned_episode_is_played_and_gold_wins_them_all(miniwob_run):
    record, _ = miniwob_run
    episodes = pd.read_parquet(record.outputs["07_model_output/evaluation_episodes.parquet"])
    ends = episodes.groupby("episode_id").agg(agent=("agent", "first"), split=("eval_split", "first"),
                                              task_type=("task_type", "first"), trial=("trial", "first"), won=("won", "any"))
    assert set(ends["agent"]) == AGENTS
    planned = {("seen", t) for t in TRAINED} | {("unseen", t) for t in TRAINED} | {("unseen_types", t) for t in HELD_OUT}
    for agent in AGENTS:
        mine = ends[ends["agent"] == agent]
        counts = mine.groupby(["split", "task_type"]).size().to_dict()
        assert counts == {key: TRIALS for key in planned}, agent  # one task per game and split, TRIALS times
    gold = ends[ends["agent"] == "gold"]
    assert gold["won"].all(), gold[~gold["won"]]


def test_the_report_gives_pass_k_by_task_type_for_every_agent_and_seeds_mechanism(miniwob_run):
    record, _ = miniwob_run
    pass_k = pd.read_csv(record.outputs["08_reporting/evaluation_pass_k.csv"])
    by_type = pass_k[pass_k["breakdown"] == "task_type"]
    for agent in AGENTS:
        rows = by_type[by_type["agent"] == agent]
        assert set(rows["k"]) == {1, 2}, agent
        assert set(rows["group"]) == {*TRAINED, *HELD_OUT, "all"}, agent
    gold = by_type[by_type["agent"] == "gold"]
    assert (gold["pass_k"] == 1.0).all()
    report = record.outputs["08_reporting/evaluation.md"].read_text()
    assert "## Held-out pass^k" in report and "| gold | unseen_types | task_type |" in report
    mechanism = report[report.index("mechanism (per update)"):]
    assert "skills parsed" in mechanism and "distillation loss" in mechanism and "gate mean" in mechanism
    premise = pd.read_csv(record.outputs["08_reporting/skill_premise_summary.csv"])
    assert len(premise) > 0


def test_gold_episodes_keep_their_screens_and_every_agent_gets_a_filmstrip(miniwob_run):
    record, project = miniwob_run
    trajectories = pd.read_parquet(record.outputs["03_primary/trajectories.parquet"])
    screens = pd.read_parquet(record.outputs["03_primary/screenshots.parquet"])
    steps = set(zip(trajectories["episode_id"], trajectories["step"]))
    assert set(trajectories["task_type"]) == set(TRAINED) and len(steps) == len(trajectories)
    assert set(zip(screens["episode_id"], screens["step"])) == steps  # one screen per gold step
    client = project.mlflow_client()
    folders = {item.path for item in client.list_artifacts(record.mlflow_run.info.run_id, "filmstrips")}
    assert {f"filmstrips/{agent}" for agent in AGENTS} <= folders


def test_no_browser_is_left_after_the_run_and_the_limits_are_put_back(miniwob_run):
    assert [process.pid for process in marked_processes(os.getpid())] == []
    assert browser_pool().browsers == [] and browser_pool().settings.idle_browsers == 0


def test_wmr1_learns_the_page_and_trains_inside_it(miniwob_run):
    """``--pipeline world_model`` on the page views (held-out scores per action type), then
    ``--pipeline wmr1``: one update inside the world model, no browser left."""
    record, project = miniwob_run
    one_each = {"random_episodes_per_game": 1, "policy_episodes": {"tasks_per_game": 1, "episodes_per_task": 2}}
    world = project.run(pipeline_names=["world_model"], runtime_params={"world_model": one_each})
    examples = pd.read_parquet(world.outputs["05_model_input/world_model_examples.parquet"])
    assert examples["prompt"].str.contains(r"\[\d+\] [A-Z]").all()  # every prompt shows a page view
    explored = pd.read_parquet(world.outputs["02_intermediate/world_model_exploration.parquet"])
    assert explored["episode_id"].nunique() == len(TRAINED)  # one random episode per task type, in Chromium
    played = pd.read_parquet(world.outputs["02_intermediate/world_model_policy_episodes.parquet"])
    assert played["episode_id"].str.startswith("policy/").all() and len(played)  # the start policy's own, 2 per task type
    recorded = [pd.read_parquet(record.outputs[name]) for name in ("03_primary/trajectories.parquet", "04_feature/skill_rollouts.parquet")]
    steps = pd.concat([explored, played, *recorded])
    lost = sum(ended_lost(episode.sort_values("step"), JOB["environment"]["max_steps"]) for _, episode in steps.groupby("episode_id"))
    assert (examples["response"] == FAILED_MARKER).sum() == lost  # every episode the page ended lost, learnt as failed
    evaluation = pd.read_parquet(world.outputs["07_model_output/world_model_evaluation.parquet"])
    kinds = set(evaluation["action_type"])
    assert kinds and kinds <= {"click", "type", "press"}
    metrics = world.mlflow_run.data.metrics
    for kind in kinds:
        mine = evaluation[evaluation["action_type"] == kind]
        assert metrics[f"world_model/heldout_exact_match/{kind}"] == pytest.approx(mine["exact_match"].mean())
        assert metrics[f"world_model/heldout_line_score/{kind}"] == pytest.approx(mine["line_score"].mean())
    assert (evaluation["line_score"] >= evaluation["exact_match"].astype(float)).all()  # an exact match has every line right
    rl = project.run(pipeline_names=["wmr1"], runtime_params={"training": {"tasks_per_game": 1, "rl": {"updates": 1, "eval_every": 0}}})
    history = pd.read_parquet(rl.outputs["07_model_output/training_history.parquet"])
    assert len(history) == 1 and (history["world_model/calls"] > 0).all()
    assert (history["charts/env_steps_total"] == 0).all(), "the update played inside the world model, not the browser"
    assert [process.pid for process in marked_processes(os.getpid())] == []

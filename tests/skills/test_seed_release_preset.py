"""``conf/seed_release`` (the official SEED release's training on the pretrained route),
read through the project's config builder and run through the skills and Stage-1 node
functions on real episodes: the analysis prompt carries the whole trajectory of a long
episode, and the Stage-1 mixture is analyzer SFT on every parsed teacher skill, with no
behaviour-cloning row. The same episode under conf/base's settings is cut, so the check
can fail."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from hindsight.config import check_parameters
from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples
from hindsight.pipelines.skills.nodes import build_analyzer_sft_set, make_teacher, write_hindsight_skills
from hindsight.pipelines.stage1.nodes import own_rollout_examples, stage1_examples
from hindsight.skills.analysis_prompt import WORKFLOW_INSTRUCTION, WORKFLOW_INSTRUCTION_BY_NAME
from hindsight.skills.analyzers import policy_teacher
from hindsight.skills.episode_views import episodes_from_table
from hindsight.skills.teachers import episode_analysis_prompt

pytestmark = pytest.mark.unit

CONF = Path(__file__).resolve().parents[2] / "conf"
STEPS = 15  # the preset's environment.max_steps
FILLER = " The room is quiet; nothing else here has changed since the last look." * 12  # ~850 characters


def settings(env: str) -> dict:
    """Every settings object of conf/base with ``conf/<env>/parameters.yml`` over it, block by
    block (as Kedro merges), through ``config.check_parameters``."""
    params = {}
    for path in sorted((CONF / "base").glob("parameters*.yml")):
        params.update(yaml.safe_load(path.read_text()))
    if env != "base":
        params.update(yaml.safe_load((CONF / env / "parameters.yml").read_text()))
    return check_parameters(params)


@pytest.fixture(scope="module")
def long_rollout(recorded_tables) -> pd.DataFrame:
    """A real failed twc rollout stretched to the step limit: its "look around" steps repeated,
    each observation marked with its step and ~850 characters long."""
    failure = recorded_tables["twc_failure"]
    rows = failure.to_dict("records")
    looks = [row for row in rows if row["action"] == "look around"]
    while len(rows) < STEPS:
        rows.append(dict(looks[len(rows) % len(looks)]))
    for step, row in enumerate(rows):
        row.update(step=step, episode_id="long-failure", source="rollout", policy_version=0, won=False, done=step == STEPS - 1)
        row["observation"] = f"[observation of step {step}]" + FILLER
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def experts(recorded_tables) -> pd.DataFrame:
    return pd.concat([recorded_tables["twc_gold"], recorded_tables["cooking_gold"]], ignore_index=True)


def analyzer_set(env: str, experts: pd.DataFrame, rollouts: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(skills table, analyzer SFT set, settings) as the skills stage builds them (the
    validation filter is off in the preset: every written record counts as parsed or not)."""
    built = settings(env)
    project, skills = built["project"], built["skills"]
    records = write_hindsight_skills(experts, rollouts, make_teacher(None, project, skills, {}))
    table = records.assign(accepted=records["parse_ok"], delta_success=0.0)
    return table, build_analyzer_sft_set(experts, rollouts, table, project, skills), built


def test_the_preset_builds_what_the_release_trains():
    built = settings("seed_release")
    analyzer, rl = built["project"].analyzer, built["training"].rl
    assert analyzer.language == "json" and not analyzer.structured and not analyzer.name_objects_by_role
    assert analyzer.max_new_tokens == 4096 and built["stage1"].sft.max_length == 16384
    assert not built["skills"].validation.enabled and built["skills"].analyzer_sft_from == "parsed"
    assert built["skills"].analyzer_heldout_fraction == 0.0 and not built["stage1"].behaviour_cloning
    assert rl.algorithm == "seed" and rl.entropy_coef == 0.001 and rl.methods["seed"]["step_score"] == "release"
    assert built["behaviour_cloning"].policy.from_pretrained_model  # the pretrained route


def test_the_analysis_prompt_carries_every_step_of_a_long_episode(experts, long_rollout, tiny_policy):
    _, examples, built = analyzer_set("seed_release", experts, long_rollout)
    prompt = examples.set_index("episode_id").loc["long-failure", "prompt"]
    for step in range(STEPS):
        assert f"[observation of step {step}]{FILLER}" in prompt, step
    assert f"Trajectory ({STEPS} steps):" in prompt and "omitted" not in prompt
    # the RL loop's analyzer (the policy as teacher) reads the very same prompt
    (episode,) = episodes_from_table(long_rollout)
    assert policy_teacher(tiny_policy, built["project"].analyzer).prompts([episode]) == [prompt]
    success = examples.set_index("episode_id").loc["twc-gold", "prompt"]
    assert WORKFLOW_INSTRUCTION_BY_NAME in success and WORKFLOW_INSTRUCTION not in success
    # conf/base's JSON analyzer cuts the same episode (fields and steps): the check can fail
    base = settings("base")["project"].analyzer
    cut = episode_analysis_prompt(episode, **base.prompt_options())
    assert "omitted" in cut and FILLER.strip() not in cut


def test_the_stage1_mixture_is_analyzer_sft_on_every_parsed_skill(experts, long_rollout):
    table, examples, built = analyzer_set("seed_release", experts, long_rollout)
    project, stage1 = built["project"], built["stage1"]
    parsed = table[table["parse_ok"]]
    assert len(parsed) >= 2 and not examples["held_out"].any()
    assert sorted(examples["episode_id"]) == sorted(parsed["episode_id"])
    bc = behaviour_cloning_examples(experts, project)
    mixture = stage1_examples(bc, own_rollout_examples(long_rollout, project, stage1), table, examples, stage1)
    assert set(mixture["kind"]) == {"analyzer"} and len(mixture) == len(parsed)
    # the same inputs under conf/base's Stage 1 do mix in behaviour cloning
    with_bc = stage1_examples(bc, bc.iloc[:0], table, examples, settings("base")["stage1"])
    assert {"bc", "skill_bc"} <= set(with_bc["kind"])

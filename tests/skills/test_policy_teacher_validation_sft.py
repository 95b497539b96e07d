"""PolicyTeacher, the validation filter, the Skills table, the analyzer SFT set and
episodes_from_table."""

import math

import pandas as pd
import pytest

from hindsight.config import AnalyzerConfig
from hindsight.data.schema import SKILLS_TABLE_COLUMNS
from hindsight.skills import (
    PolicyTeacher,
    RuleMinerTeacher,
    ValidationOutcome,
    analyzer_sft_examples,
    episode_analysis_prompt,
    episodes_from_table,
    parse_rate,
    parse_skill_json,
    skill_passes_validation,
    skills_table,
    validated_skills_table,
)
from hindsight.skills.analyzers import rule_teacher
from hindsight.skills.compact import COMPACT_INTRODUCTION, parse_compact_skill, written_skill
from hindsight.skills.sft_set import held_out_episodes

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def table(recorded_tables):
    return pd.concat([recorded_tables["twc_gold"], recorded_tables["twc_failure"]], ignore_index=True)


def test_episodes_from_table_derives_success_and_orders_steps(table):
    shuffled = table.sample(frac=1.0, random_state=0)
    episodes = {episode.episode_id: episode for episode in episodes_from_table(shuffled)}
    assert episodes["twc-gold"].success and not episodes["twc-failure"].success
    assert [step.step for step in episodes["twc-gold"].steps] == list(range(len(episodes["twc-gold"].steps)))
    by_return = {e.episode_id: e for e in episodes_from_table(table, success_return_threshold=5.0)}
    assert by_return["twc-gold"].success and not by_return["twc-failure"].success


def test_episodes_from_table_names_the_missing_column_and_bad_row(table):
    with pytest.raises(ValueError, match="missing column.*won"):
        episodes_from_table(table.drop(columns=["won"]), source="data/trajectories.parquet")
    broken = table.copy()
    broken.loc[3, "action"] = None
    with pytest.raises(ValueError, match=r"row 3 .*'action'"):
        episodes_from_table(broken)


def test_policy_teacher_parses_generations_and_counts_failures(table):
    episodes = episodes_from_table(table)
    seen_prompts = []

    def generate(prompts):
        seen_prompts.extend(prompts)
        return ['{"episode_summary": "ok", "episode_skill": "do X before Y"}', "I cannot answer that."]

    records = PolicyTeacher(generate).write_skills(episodes)
    assert seen_prompts == [episode_analysis_prompt(episode) for episode in episodes]
    assert [record.parse_ok for record in records] == [True, False]
    assert records[0].skill == "do X before Y" and records[1].skill == ""
    assert parse_rate(records) == 0.5
    with pytest.raises(ValueError, match="1 completions for 2 prompts"):
        PolicyTeacher(lambda prompts: ["x"]).write_skills(episodes)


@pytest.mark.parametrize(
    ("plain", "plain_trials", "skill", "skill_trials", "passes"),
    [
        (2, 8, 3, 8, True),  # exactly +1 success and +0.125 rate
        (0, 4, 1, 8, True),  # +1 and exactly +0.125 with different trial counts
        (5, 24, 8, 24, True),  # +3 and 3/24 = 0.125 (rounding-safe boundary)
        (2, 8, 3, 9, False),  # +1 but the rate rises by only 0.083
        (1, 8, 1, 4, False),  # +0.125 rate but no extra success
        (4, 8, 4, 8, False),
        (6, 8, 3, 8, False),
    ],
)
def test_validation_filter_boundaries(plain, plain_trials, skill, skill_trials, passes):
    assert skill_passes_validation(plain, plain_trials, skill, skill_trials) is passes


def test_validation_filter_rejects_impossible_counts():
    with pytest.raises(ValueError, match="trial counts"):
        skill_passes_validation(0, 0, 1, 8)
    with pytest.raises(ValueError, match="skill_successes=9"):
        skill_passes_validation(0, 8, 9, 8)


def test_skills_table_and_analyzer_sft_set(table):
    records = RuleMinerTeacher().write_skills(episodes_from_table(table))
    unvalidated = skills_table(records)
    assert validated_skills_table(records).equals(unvalidated)
    assert list(unvalidated.columns) == list(SKILLS_TABLE_COLUMNS)
    assert unvalidated["accepted"].tolist() == [True, True]
    assert unvalidated["delta_success"].isna().all()

    validation = {"twc-gold": ValidationOutcome(2, 8, 4, 8), "twc-failure": ValidationOutcome(2, 8, 2, 8)}
    validated = validated_skills_table(records, validation)
    assert validated["accepted"].tolist() == [True, False]
    assert validated["delta_success"].tolist() == [0.25, 0.0]
    partly = validated_skills_table(records, {"twc-gold": ValidationOutcome(2, 8, 4, 8)})
    assert partly["accepted"].tolist() == [True, False] and math.isnan(partly["delta_success"].iloc[1])

    examples = analyzer_sft_examples(table, validated, AnalyzerConfig(language="json"))
    assert list(examples.columns) == ["prompt", "response", "episode_id", "skill", "templates", "held_out"]
    assert examples["held_out"].tolist() == [False]
    assert examples["episode_id"].tolist() == ["twc-gold"]
    gold = [e for e in episodes_from_table(table) if e.episode_id == "twc-gold"][0]
    assert examples["prompt"].iloc[0] == episode_analysis_prompt(gold)
    assert parse_skill_json(examples["response"].iloc[0]) == {
        "episode_summary": records[0].summary, "episode_skill": records[0].skill}
    with pytest.raises(ValueError, match="not found in the trajectory table"):
        analyzer_sft_examples(table[table.episode_id != "twc-gold"], validated, AnalyzerConfig(language="json"))


def test_compact_analyzer_pairs_hold_out_a_share_of_the_episodes(table):
    analyzer = AnalyzerConfig(language="compact", concrete=True)
    skills = validated_skills_table(rule_teacher(analyzer).write_skills(episodes_from_table(table)))
    examples = analyzer_sft_examples(table, skills, analyzer, held_out_fraction=0.4, seed=3)
    assert len(examples) == len(skills) >= 2
    assert 1 <= examples["held_out"].sum() < len(examples)
    for row in examples.itertuples():
        head, templates = parse_compact_skill(row.skill)
        assert row.response == written_skill(row.skill) and row.prompt.startswith(COMPACT_INTRODUCTION)
        assert set(templates) <= set(row.templates)
    again = analyzer_sft_examples(table, skills, analyzer, held_out_fraction=0.4, seed=3)
    assert again["held_out"].tolist() == examples["held_out"].tolist()  # deterministic
    assert held_out_episodes(["a", "b"], 0.9, 0) != {"a", "b"}  # never all of them
    with pytest.raises(ValueError, match=r"in \[0, 1\)"):
        held_out_episodes(["a"], 1.0, 0)


def test_the_base_policy_can_be_its_own_stage1_teacher(table, tiny_policy):
    """skills.teacher=policy: self-teaching in Stage 1 (the official self-teacher launcher)."""
    from hindsight.config import ProjectConfig, SkillsConfig
    from hindsight.pipelines.skills.nodes import make_teacher, write_hindsight_skills
    from hindsight.skills.policy_teacher import PolicyTeacher

    from hindsight.skills.compact_decoding import CompactPolicyTeacher

    project = ProjectConfig()
    project.analyzer.max_new_tokens = 8
    project.analyzer.language = "json"
    teacher = make_teacher(tiny_policy, project, SkillsConfig(teacher="policy"), {})
    assert isinstance(teacher, PolicyTeacher) and teacher.max_prompt_chars == project.analyzer.max_prompt_chars
    records = write_hindsight_skills(table, table, teacher)
    assert len(records) == table["episode_id"].nunique() and set(records["teacher"]) == {"policy"}
    project.analyzer.language = "compact"
    teacher = make_teacher(tiny_policy, project, SkillsConfig(teacher="policy"), {})
    assert isinstance(teacher, CompactPolicyTeacher) and teacher.concrete == project.analyzer.concrete
    records = write_hindsight_skills(table, table, teacher)
    assert records["parse_ok"].all() and set(records["teacher"]) == {"compact_policy"}

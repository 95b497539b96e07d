"""Nodes of the skills pipeline (Stage 1 of SEED; docs/fidelity.md, SEED).

1. the base policy plays each training task K times (``skill_rollouts``);
2. a teacher writes one skill per finished episode, for those rollouts and for the expert
   episodes of the same tasks (``skill_records``);
3. validation: each skill is injected into the prompt and its task is played M more times;
   the skill is kept if successes rise by >= 1 and the rate by >= 0.125 over the plain
   rollouts of that task (``skills``);
4. the kept skills become the analyzer SFT set (analysis prompt -> JSON).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pandas as pd

from hindsight import tracking
from hindsight.data.outcomes import episode_outcomes
from hindsight.config import ProjectConfig, SkillsConfig
from hindsight.envs import make_env
from hindsight.policy import Policy
from hindsight.rollout.engine import planned_episode_ids, run_rollouts
from hindsight.rollout.tasks import TaskRef, split_tasks
from hindsight.skills.records import parse_rate
from hindsight.skills.sft_set import analyzer_sft_examples
from hindsight.skills.episode_views import episodes_from_table
from hindsight.skills.http_teacher import OpenAICompatibleTeacher
from hindsight.skills.analyzers import policy_teacher, rule_teacher
from hindsight.skills.rule_miner import RuleMinerTeacher
from hindsight.skills.teachers import Teacher
from hindsight.skills.validation import ValidationOutcome, validated_skills_table

logger = logging.getLogger(__name__)

def skill_tasks(project: ProjectConfig, skills: SkillsConfig) -> list[TaskRef]:
    """The training tasks Stage 1 works on: the first ``tasks_per_game`` train seeds."""
    return [task for spec in project.specs() for task in split_tasks(spec, "train", skills.tasks_per_game)]


def roll_out_base_policy(base_policy: Policy, project: ProjectConfig, skills: SkillsConfig) -> pd.DataFrame:
    """Step 1: the base policy plays every Stage-1 task ``rollouts_per_task`` times."""
    settings = project.rollout_config(group_size=skills.rollouts_per_task, sampling=skills.sampling)
    result = run_rollouts(base_policy, make_env, skill_tasks(project, skills), settings, policy_version=0)
    tracking.log_metrics({"skills/base_rollout_success_rate": result.stats["success_rate"]})
    return result.table


def make_teacher(base_policy: Policy, project: ProjectConfig, skills: SkillsConfig, credentials: dict[str, Any]):
    """The Stage-1 teacher named by ``skills.teacher``: the rule miner, an OpenAI-compatible
    endpoint, or the base policy itself (self-teaching, greedy, with the ``analyzer``
    settings: its skills are then the policy's own from the start). For the endpoint,
    ``skills.teacher_fallback`` says what an episode it could not answer gets."""
    if skills.teacher == "rule_miner":
        return rule_teacher(project.analyzer)
    if skills.teacher == "openai":
        endpoint = skills.openai
        return OpenAICompatibleTeacher(
            base_url=endpoint.base_url,
            model=endpoint.model,
            api_key=(credentials or {}).get("api_key"),
            timeout=endpoint.timeout_s,
            max_retries=endpoint.max_retries,
            backoff=endpoint.backoff_s,
            max_concurrency=endpoint.max_concurrency,
            sampling=endpoint.decoding(),
            circuit_breaker=endpoint.circuit_breaker,
            fallback=RuleMinerTeacher() if skills.teacher_fallback == "rule_miner" else None,
            fail_when_down=skills.teacher_fallback == "error",
        )
    return policy_teacher(base_policy, project.analyzer)


def write_hindsight_skills(trajectories: pd.DataFrame, skill_rollouts: pd.DataFrame, teacher: Teacher) -> pd.DataFrame:
    """Step 2: one skill per finished episode (base-policy rollouts and the expert episodes
    of the same tasks), by the teacher. Parse failures are counted, not fatal.

    Returns:
        The teacher's records (episode_id, group_id, success, summary, skill, teacher,
        parse_ok, raw_output).
    """
    tasks = set(skill_rollouts["group_id"])
    expert = trajectories[trajectories["group_id"].isin(tasks)]
    table = pd.concat([expert, skill_rollouts], ignore_index=True)
    records = teacher.write_skills(episodes_from_table(table))
    rate = parse_rate(records)
    tracking.log_metrics({"skills/parse_rate": rate, "skills/written": float(len(records))})
    tracking.log_metrics({f"skills/teacher_{key}": value for key, value in getattr(teacher, "last_run", {}).items()})
    logger.info("Teacher %s wrote %d skills (parse rate %.2f)", teacher.name, len(records), rate)
    return pd.DataFrame([dataclasses.asdict(record) for record in records])


def validate_skills(
    skill_records: pd.DataFrame,
    skill_rollouts: pd.DataFrame,
    base_policy: Policy,
    project: ProjectConfig,
    skills: SkillsConfig,
) -> pd.DataFrame:
    """Step 3: the validation filter. Each parsed skill is injected into the prompt of M new
    rollouts of its task; it is kept if it beats the plain rollouts of that task by >= 1
    success and >= 0.125 in rate (parameters ``skills.validation``). A skill written for
    several episodes of one task is validated once (``skills/validated_distinct``).

    Returns:
        The skills table (``hindsight.data.schema.SKILLS_TABLE_COLUMNS``): episode_id, group_id,
        success, summary, skill, teacher, accepted, delta_success, parse_ok.
    """
    from hindsight.skills.records import SkillRecord

    records = [SkillRecord(**{k: row[k] for k in SkillRecord.__dataclass_fields__}) for row in skill_records.to_dict("records")]
    validation = skills.validation
    gains = dict(min_success_gain=validation.min_success_gain, min_rate_gain=validation.min_rate_gain)
    if not validation.enabled:
        table = validated_skills_table(records, None, **gains)
        tracking.log_metrics({"skills/accepted_rate": float(table["accepted"].mean())})
        return table

    plain = episode_outcomes(skill_rollouts, ["group_id"])
    plain_outcome = plain.groupby("group_id")["success"].agg(["sum", "count"])
    parsed = [record for record in records if record.parse_ok and record.group_id in plain_outcome.index]
    task_of = {task.group_id: task for task in skill_tasks(project, skills)}
    settings = project.rollout_config(
        group_size=validation.rollouts, sampling=skills.sampling, seed=project.seeds.validation
    )
    # Episodes of one task often get the very same skill (the rule teacher names the same
    # actions for every win of a task): each distinct (task, skill) is validated once and
    # its outcome shared by every record that wrote it.
    distinct = list(dict.fromkeys((record.group_id, record.skill) for record in parsed))
    outcomes: dict[str, ValidationOutcome] = {}
    played = 0
    if distinct:
        tasks = [task_of[group_id] for group_id, _ in distinct]
        episode_ids = planned_episode_ids(tasks, settings, policy_version=0, source="rollout")
        pair_of_episode = {
            episode_id: index
            for index in range(len(distinct))
            for episode_id in episode_ids[index * settings.group_size : (index + 1) * settings.group_size]
        }
        skill_of_episode = {episode_id: distinct[index][1] for episode_id, index in pair_of_episode.items()}
        result = run_rollouts(base_policy, make_env, tasks, settings, policy_version=0, skills=skill_of_episode)
        won = episode_outcomes(result.table).set_index("episode_id")["success"]
        played = len(won)
        per_pair: dict[int, list[bool]] = {}
        for episode_id, success in won.items():
            per_pair.setdefault(pair_of_episode[episode_id], []).append(bool(success))
        index_of_pair = {pair: index for index, pair in enumerate(distinct)}
        for record in parsed:
            results = per_pair.get(index_of_pair[(record.group_id, record.skill)], [])
            base = plain_outcome.loc[record.group_id]
            outcomes[record.episode_id] = ValidationOutcome(
                plain_successes=int(base["sum"]),
                plain_trials=int(base["count"]),
                skill_successes=sum(results),
                skill_trials=len(results),
            )
    table = validated_skills_table(records, outcomes, **gains)
    tracking.log_metrics(
        {
            "skills/accepted_rate": float(table["accepted"].mean()) if len(table) else 0.0,
            "skills/accepted": float(table["accepted"].sum()),
            "skills/mean_delta_success": float(table["delta_success"].mean()) if len(table) else 0.0,
            "skills/validated_distinct": float(len(distinct)),
            "skills/validation_episodes": float(played),
        }
    )
    logger.info("Validation kept %d of %d skills", int(table["accepted"].sum()), len(table))
    return table


def build_analyzer_sft_set(
    trajectories: pd.DataFrame,
    skill_rollouts: pd.DataFrame,
    skills_table_: pd.DataFrame,
    project: ProjectConfig,
    skills: SkillsConfig,
) -> pd.DataFrame:
    """Step 4: (analysis prompt -> skill) pairs in the ``analyzer`` language: of the accepted
    skills, of every parsed one (``skills.analyzer_sft_from: parsed``), or of the language's
    rule teacher on every expert episode and base-policy rollout (``every_episode``), with
    ``skills.analyzer_heldout_fraction`` of the episodes held out."""
    table = pd.concat([trajectories, skill_rollouts], ignore_index=True)
    if skills.analyzer_sft_from == "every_episode":
        records = rule_teacher(project.analyzer).write_skills(episodes_from_table(table))
        chosen = validated_skills_table(records)
    elif skills.analyzer_sft_from == "parsed":
        chosen = skills_table_.assign(accepted=skills_table_["parse_ok"])
    else:
        chosen = skills_table_
    examples = analyzer_sft_examples(
        table, chosen, project.analyzer, held_out_fraction=skills.analyzer_heldout_fraction, seed=project.seed
    )
    tracking.log_metrics(
        {
            "skills/analyzer_sft_examples": float(len(examples)),
            "skills/analyzer_heldout_examples": float(examples["held_out"].sum()) if len(examples) else 0.0,
        }
    )
    return examples

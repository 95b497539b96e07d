"""Nodes of the skills pipeline (Stage 1 of SEED, ALGORITHMS.md section 1, steps 1-4).

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
from hindsight.config import environment_specs, rollout_config
from hindsight.envs import make_env
from hindsight.rollout.engine import planned_episode_ids, run_rollouts
from hindsight.rollout.tasks import TaskRef, split_tasks
from hindsight.skills.records import parse_rate
from hindsight.skills.sft_set import analyzer_sft_examples
from hindsight.skills.episodes import episodes_from_table
from hindsight.skills.teachers import OpenAICompatibleTeacher, PolicyTeacher, RuleMinerTeacher, policy_analyzer
from hindsight.skills.validation import ValidationOutcome, skills_table

logger = logging.getLogger(__name__)

TEACHERS = ("rule_miner", "openai", "policy")


def skill_tasks(environment: dict[str, Any], skills: dict[str, Any]) -> list[TaskRef]:
    """The training tasks Stage 1 works on: the first ``tasks_per_game`` train seeds."""
    count = int(skills.get("tasks_per_game", 16))
    return [task for spec in environment_specs(environment) for task in split_tasks(spec, "train", count)]


def roll_out_base_policy(base_policy, environment, skills, rollout, prompt, reward) -> pd.DataFrame:
    """Step 1: the base policy plays every Stage-1 task ``rollouts_per_task`` times."""
    settings = dataclasses.replace(
        rollout_config(rollout, prompt, reward, environment),
        group_size=int(skills.get("rollouts_per_task", 4)),
        temperature=float(skills.get("temperature", 0.4)),
    )
    result = run_rollouts(base_policy, make_env, skill_tasks(environment, skills), settings, policy_version=0)
    tracking.log_metrics({"skills/base_rollout_success_rate": result.stats["success_rate"]})
    return result.table


def make_teacher(skills: dict[str, Any], credentials: dict[str, Any], policy=None):
    """The teacher named by ``skills.teacher``."""
    name = skills.get("teacher", "rule_miner")
    if name == "rule_miner":
        return RuleMinerTeacher()
    if name == "openai":
        endpoint = dict(skills.get("openai") or {})
        return OpenAICompatibleTeacher(
            base_url=endpoint["base_url"],
            model=endpoint["model"],
            api_key=(credentials or {}).get("api_key"),
            timeout=float(endpoint.get("timeout_s", 60)),
            max_retries=int(endpoint.get("max_retries", 3)),
            backoff=float(endpoint.get("backoff_s", 1.0)),
            max_concurrency=int(endpoint.get("max_concurrency", 4)),
            temperature=float(endpoint.get("temperature", 0.0)),
        )
    if name == "policy":
        if policy is None:
            raise ValueError("skills.teacher=policy needs a policy")
        max_new_tokens = int(skills.get("analyzer_max_new_tokens", 128))
        structured = skills.get("analyzer_structured", False)
        if not isinstance(structured, bool):
            raise ValueError(f"parameters 'skills.analyzer_structured' must be true or false, got {structured!r}")
        return PolicyTeacher(policy_analyzer(policy, max_new_tokens, structured))
    raise ValueError(f"parameters 'skills.teacher' must be one of {TEACHERS}, got {name!r}")


def write_hindsight_skills(
    trajectories: pd.DataFrame, skill_rollouts: pd.DataFrame, skills: dict[str, Any], credentials: dict[str, Any]
) -> pd.DataFrame:
    """Step 2: one skill per finished episode (base-policy rollouts and the expert episodes
    of the same tasks), by the configured teacher. Parse failures are counted, not fatal.

    Returns:
        The teacher's records (episode_id, group_id, success, summary, skill, teacher,
        parse_ok, raw_output).
    """
    tasks = set(skill_rollouts["group_id"])
    expert = trajectories[trajectories["group_id"].isin(tasks)]
    table = pd.concat([expert, skill_rollouts], ignore_index=True)
    if skills.get("teacher") == "policy":
        raise ValueError(
            "skills.teacher=policy: the skills pipeline writes Stage-1 skills with an external "
            "teacher (rule_miner or openai); the policy writes its own skills during RL"
        )
    teacher = make_teacher(skills, credentials)
    records = teacher.write_skills(episodes_from_table(table))
    rate = parse_rate(records)
    tracking.log_metrics({"skills/parse_rate": rate, "skills/written": float(len(records))})
    logger.info("Teacher %s wrote %d skills (parse rate %.2f)", skills.get("teacher", "rule_miner"), len(records), rate)
    return pd.DataFrame([dataclasses.asdict(record) for record in records])


def validate_skills(
    skill_records: pd.DataFrame,
    skill_rollouts: pd.DataFrame,
    base_policy,
    environment,
    skills,
    rollout,
    prompt,
    reward,
) -> pd.DataFrame:
    """Step 3: the validation filter. Each parsed skill is injected into the prompt of M new
    rollouts of its task; it is kept if it beats the plain rollouts of that task by >= 1
    success and >= 0.125 in rate (parameters ``skills.validation``).

    Returns:
        The skills table (DESIGN.md): episode_id, group_id, success, summary, skill,
        teacher, accepted, delta_success, parse_ok.
    """
    from hindsight.skills.records import SkillRecord

    records = [SkillRecord(**{k: row[k] for k in SkillRecord.__dataclass_fields__}) for row in skill_records.to_dict("records")]
    validation_params = dict(skills.get("validation") or {})
    gains = dict(
        min_success_gain=int(validation_params.get("min_success_gain", 1)),
        min_rate_gain=float(validation_params.get("min_rate_gain", 0.125)),
    )
    if not validation_params.get("enabled", True):
        table = skills_table(records, None, **gains)
        tracking.log_metrics({"skills/accepted_rate": float(table["accepted"].mean())})
        return table

    plain = skill_rollouts.groupby("episode_id").agg(group_id=("group_id", "first"), won=("won", "any"))
    plain_outcome = plain.groupby("group_id")["won"].agg(["sum", "count"])
    parsed = [record for record in records if record.parse_ok and record.group_id in plain_outcome.index]
    task_of = {
        task.group_id: task for task in skill_tasks(environment, skills)
    }
    settings = dataclasses.replace(
        rollout_config(rollout, prompt, reward, environment),
        group_size=int(validation_params.get("rollouts", 4)),
        temperature=float(skills.get("temperature", 0.4)),
        seed=int(rollout.get("seed", 0)) + 1,
    )
    tasks = [task_of[record.group_id] for record in parsed]
    episode_ids = planned_episode_ids(tasks, settings, policy_version=0, source="rollout")
    skill_of_episode, record_of_episode = {}, {}
    for index, record in enumerate(parsed):
        for episode_id in episode_ids[index * settings.group_size : (index + 1) * settings.group_size]:
            skill_of_episode[episode_id] = record.skill
            record_of_episode[episode_id] = record.episode_id
    outcomes: dict[str, ValidationOutcome] = {}
    if parsed:
        result = run_rollouts(base_policy, make_env, tasks, settings, policy_version=0, skills=skill_of_episode)
        won = result.table.groupby("episode_id")["won"].any()
        per_record: dict[str, list[bool]] = {}
        for episode_id, success in won.items():
            per_record.setdefault(record_of_episode[episode_id], []).append(bool(success))
        for record in parsed:
            results = per_record.get(record.episode_id, [])
            base = plain_outcome.loc[record.group_id]
            outcomes[record.episode_id] = ValidationOutcome(
                plain_successes=int(base["sum"]),
                plain_trials=int(base["count"]),
                skill_successes=sum(results),
                skill_trials=len(results),
            )
    table = skills_table(records, outcomes, **gains)
    tracking.log_metrics(
        {
            "skills/accepted_rate": float(table["accepted"].mean()) if len(table) else 0.0,
            "skills/accepted": float(table["accepted"].sum()),
            "skills/mean_delta_success": float(table["delta_success"].mean()) if len(table) else 0.0,
        }
    )
    logger.info("Validation kept %d of %d skills", int(table["accepted"].sum()), len(table))
    return table


def build_analyzer_sft_set(
    trajectories: pd.DataFrame, skill_rollouts: pd.DataFrame, skills_table_: pd.DataFrame, skills: dict[str, Any]
) -> pd.DataFrame:
    """Step 4: (analysis prompt -> JSON) pairs of the accepted skills (or, with
    ``skills.analyzer_sft_from: parsed``, of every parsed skill)."""
    table = pd.concat([trajectories, skill_rollouts], ignore_index=True)
    chosen = skills_table_
    if skills.get("analyzer_sft_from", "accepted") == "parsed":
        chosen = skills_table_.assign(accepted=skills_table_["parse_ok"])
    examples = analyzer_sft_examples(table, chosen, max_prompt_chars=int(skills.get("analyzer_max_prompt_chars", 6000)))
    tracking.log_metrics({"skills/analyzer_sft_examples": float(len(examples))})
    return examples

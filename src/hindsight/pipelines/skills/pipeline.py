"""Wiring of the skills stage."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.settings_nodes import stage_pipeline
from hindsight.pipelines.skills.nodes import (
    build_analyzer_sft_set,
    make_teacher,
    roll_out_base_policy,
    validate_skills,
    write_hindsight_skills,
)


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "skills",
        [
            Node(
                roll_out_base_policy,
                inputs=["base_policy", "project_settings", "skills_settings"],
                outputs="skill_rollouts",
                name="roll_out_base_policy",
            ),
            Node(
                make_teacher,
                inputs=["base_policy", "project_settings", "skills_settings", "teacher_credentials"],
                outputs="skill_teacher",
                name="make_teacher",
            ),
            Node(
                write_hindsight_skills,
                inputs=["trajectories", "skill_rollouts", "skill_teacher"],
                outputs="skill_records",
                name="write_hindsight_skills",
            ),
            Node(
                validate_skills,
                inputs=["skill_records", "skill_rollouts", "base_policy", "project_settings", "skills_settings"],
                outputs="skills",
                name="validate_skills",
            ),
            Node(
                build_analyzer_sft_set,
                inputs=["trajectories", "skill_rollouts", "skills", "project_settings", "skills_settings"],
                outputs="analyzer_sft_set",
                name="build_analyzer_sft_set",
            ),
        ],
    )

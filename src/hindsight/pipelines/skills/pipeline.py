"""Wiring of the skills pipeline."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.skills.nodes import (
    build_analyzer_sft_set,
    roll_out_base_policy,
    validate_skills,
    write_hindsight_skills,
)


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                roll_out_base_policy,
                inputs=["base_policy", "params:environment", "params:skills", "params:rollout", "params:prompt", "params:reward"],
                outputs="skill_rollouts",
                name="roll_out_base_policy",
            ),
            Node(
                write_hindsight_skills,
                inputs=["trajectories", "skill_rollouts", "params:skills", "teacher_credentials"],
                outputs="skill_records",
                name="write_hindsight_skills",
            ),
            Node(
                validate_skills,
                inputs=["skill_records", "skill_rollouts", "base_policy", "params:environment", "params:skills", "params:rollout", "params:prompt", "params:reward"],
                outputs="skills",
                name="validate_skills",
            ),
            Node(
                build_analyzer_sft_set,
                inputs=["trajectories", "skill_rollouts", "skills", "params:skills"],
                outputs="analyzer_sft_set",
                name="build_analyzer_sft_set",
            ),
        ]
    )

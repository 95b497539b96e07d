"""Wiring of the Stage-1 stage."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.settings_nodes import stage_pipeline
from hindsight.pipelines.stage1.nodes import (
    check_skill_premise,
    evaluate_stage1_analyzer,
    fit_stage1_teacher,
    own_rollout_examples,
    skill_use_examples,
    stage1_mixture,
    train_stage1_policy,
)


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "stage1",
        [
            Node(
                own_rollout_examples,
                inputs=["skill_rollouts", "project_settings", "stage1_settings"],
                outputs="own_rollout_examples",
                name="make_own_rollout_examples",
            ),
            Node(
                skill_use_examples,
                inputs=["bc_examples", "own_rollout_examples", "skills", "analyzer_sft_set", "stage1_settings"],
                outputs="stage1_skill_use_examples",
                name="make_skill_use_examples",
            ),
            Node(
                stage1_mixture,
                inputs=["stage1_skill_use_examples", "analyzer_sft_set", "stage1_settings", "screenshots"],
                outputs="stage1_examples",
                name="make_stage1_examples",
            ),
            Node(
                train_stage1_policy,
                inputs=["base_policy", "stage1_examples", "project_settings", "stage1_settings", "screenshots"],
                outputs=["stage1_sft_policy", "stage1_history"],
                name="stage1_training",
            ),
            Node(
                fit_stage1_teacher,
                inputs=["stage1_sft_policy", "stage1_examples", "project_settings", "stage1_settings", "screenshots"],
                outputs=["stage1_policy", "teacher_fit_history"],
                name="fit_teacher",
            ),
            Node(
                evaluate_stage1_analyzer,
                inputs=["stage1_policy", "analyzer_sft_set", "project_settings"],
                outputs="analyzer_evaluation",
                name="evaluate_analyzer",
            ),
            Node(
                check_skill_premise,
                inputs=["stage1_policy", "project_settings", "stage1_settings"],
                outputs=["skill_premise", "skill_premise_summary", "skill_premise_ranking"],
                name="check_skill_premise",
            ),
        ],
    )


def create_premise_pipeline(policy: str, outputs: tuple[str, str, str]) -> Pipeline:
    """The stage's settings and its premise check (``check_skill_premise``) alone, on the
    policy ``policy`` (e.g. a pretrained model without Stage 1), writing its three tables to
    ``outputs`` (the per-episode table, the summary, the ranking's summary)."""
    return stage_pipeline(
        "stage1",
        [
            Node(
                check_skill_premise,
                inputs=[policy, "project_settings", "stage1_settings"],
                outputs=list(outputs),
                name="check_skill_premise",
            ),
        ],
    )

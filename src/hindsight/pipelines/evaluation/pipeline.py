"""Wiring of the evaluation stage (the filmstrips node logs to MLflow only, and does nothing
for games that render no screen)."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.evaluation.nodes import evaluate_rl_policy, evaluate_stage1_policy, log_filmstrips, report_evaluation
from hindsight.pipelines.settings_nodes import stage_pipeline

SETTINGS = ["project_settings", "evaluation_settings"]


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "evaluation",
        [
            Node(evaluate_stage1_policy, inputs=["stage1_policy", *SETTINGS], outputs="stage1_evaluation_episodes", name="evaluate_stage1_policy"),
            Node(evaluate_rl_policy, inputs=["rl_policy", *SETTINGS], outputs="rl_evaluation_episodes", name="evaluate_rl_policy"),
            Node(
                report_evaluation,
                inputs=["stage1_evaluation_episodes", "rl_evaluation_episodes", "training_history"],
                outputs=["evaluation_episodes", "evaluation_summary", "evaluation_pass_k", "evaluation_table", "evaluation_plot"],
                name="report_evaluation",
            ),
            Node(log_filmstrips, inputs=["evaluation_episodes", *SETTINGS], outputs=None, name="log_filmstrips"),
        ],
    )

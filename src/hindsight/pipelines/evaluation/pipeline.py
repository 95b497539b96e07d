"""Wiring of the evaluation pipeline."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.evaluation.nodes import evaluate_rl_policy, evaluate_stage1_policy, report_evaluation

SHARED = ["params:environment", "params:evaluation", "params:rollout", "params:prompt", "params:reward"]


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(evaluate_stage1_policy, inputs=["warmup_policy", *SHARED], outputs="stage1_evaluation_episodes", name="evaluate_stage1_policy"),
            Node(evaluate_rl_policy, inputs=["rl_policy", *SHARED], outputs="rl_evaluation_episodes", name="evaluate_rl_policy"),
            Node(
                report_evaluation,
                inputs=["stage1_evaluation_episodes", "rl_evaluation_episodes"],
                outputs=["evaluation_episodes", "evaluation_summary", "evaluation_table", "evaluation_plot"],
                name="report_evaluation",
            ),
        ]
    )

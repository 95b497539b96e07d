"""Wiring of the training stage."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.settings_nodes import stage_pipeline
from hindsight.pipelines.training.nodes import plot_training_curves, train_with_rl


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "training",
        [
            Node(
                train_with_rl,
                inputs=["stage1_policy", "base_policy", "skills", "project_settings", "training_settings"],
                outputs=["rl_policy", "training_history", "training_last_rollout", "training_last_skills"],
                name="train_with_rl",
            ),
            Node(plot_training_curves, inputs="training_history", outputs="training_curves_plot", name="plot_training_curves"),
        ],
    )

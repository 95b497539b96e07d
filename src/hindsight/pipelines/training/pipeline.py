"""Wiring of the training pipeline."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.training.nodes import plot_training_curves, train_with_rl


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                train_with_rl,
                inputs=[
                    "warmup_policy", "base_policy", "skills",
                    "params:algorithm", "params:training", "params:environment", "params:rollout", "params:prompt", "params:reward",
                    "params:evaluation", "params:ingestion",
                ],
                outputs=["rl_policy", "training_history", "training_last_rollout", "training_last_skills"],
                name="train_with_rl",
            ),
            Node(plot_training_curves, inputs="training_history", outputs="training_curves_plot", name="plot_training_curves"),
        ]
    )

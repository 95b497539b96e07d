"""Wiring of the scoring pipeline."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.scoring.nodes import plot_gate_distribution, score_distillation_signals


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                score_distillation_signals,
                inputs=["skill_rollouts", "skills", "warmup_policy", "params:scoring", "params:prompt", "params:rollout"],
                outputs="scores",
                name="score_distillation_signals",
            ),
            Node(plot_gate_distribution, inputs=["scores", "skill_rollouts"], outputs="scores_gate_plot", name="plot_gate_distribution"),
        ]
    )

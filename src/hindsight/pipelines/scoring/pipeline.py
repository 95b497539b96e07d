"""Wiring of the scoring pipeline (reads the skills stage's outputs and the Stage-1 policy)."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.scoring.nodes import plot_gate_distribution, score_distillation_signals
from hindsight.pipelines.settings_nodes import stage_pipeline


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "scoring",
        [
            Node(
                score_distillation_signals,
                inputs=["skill_rollouts", "skills", "stage1_policy", "project_settings", "scoring_settings"],
                outputs="scores",
                name="score_distillation_signals",
            ),
            Node(plot_gate_distribution, inputs=["scores", "skill_rollouts"], outputs="scores_gate_plot", name="plot_gate_distribution"),
        ],
    )

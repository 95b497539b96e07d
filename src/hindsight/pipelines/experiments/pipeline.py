"""Wiring of the experiments pipeline: the stages it needs (ingestion, warm-up, skills)
and the grid with its reports. ``kedro run --pipeline experiments`` runs it all."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.experiments.nodes import report_experiments, run_experiment_grid
from hindsight.pipelines.ingestion import create_pipeline as ingestion
from hindsight.pipelines.skills import create_pipeline as skills
from hindsight.pipelines.warmup import create_pipeline as warmup


def create_pipeline(**kwargs) -> Pipeline:
    grid = Pipeline(
        [
            Node(
                run_experiment_grid,
                inputs=[
                    "warmup_policy", "base_policy", "skills", "params:experiments", "params:training",
                    "params:environment", "params:rollout", "params:prompt", "params:reward", "params:evaluation",
                    "params:ingestion",
                ],
                outputs=["experiment_cells", "experiment_histories"],
                name="run_experiment_grid",
            ),
            Node(
                report_experiments,
                inputs=["experiment_cells", "experiment_histories", "params:experiments"],
                outputs=["experiment_results", "experiment_report", "experiment_curves_plot", "experiment_data_efficiency_plot"],
                name="report_experiments",
            ),
        ]
    )
    return ingestion() + warmup() + skills() + grid

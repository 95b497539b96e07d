"""Wiring of the experiment grid and its reports. The registry composes the stages it
needs (ingestion, behaviour cloning, skills, Stage 1) in front of it."""

from kedro.pipeline import Node, Pipeline

from hindsight.config.files import grid_settings
from hindsight.pipelines.experiments.nodes import report_experiments, run_experiment_grid


def create_pipeline(**kwargs) -> Pipeline:
    nodes = [
        Node(
            grid_settings,
            inputs=["params:training", "params:experiments"],
            outputs="experiment_settings",
            name="read_settings",
        ),
        Node(
            run_experiment_grid,
            inputs=["stage1_policy", "base_policy", "skills", "project_settings", "experiment_settings"],
            outputs=["experiment_cells", "experiment_histories"],
            name="run_experiment_grid",
        ),
        Node(
            report_experiments,
            inputs=["experiment_cells", "experiment_histories", "experiment_settings"],
            outputs=["experiment_results", "experiment_report", "experiment_curves_plot", "experiment_data_efficiency_plot"],
            name="report_experiments",
        ),
    ]
    return Pipeline([node.tag("experiments") for node in nodes], namespace="experiments", prefix_datasets_with_namespace=False)

"""Wiring of the ingestion pipeline."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.ingestion.nodes import (
    collect_expert_trajectories,
    combine_trajectories,
    load_external_trajectories,
    summarize_trajectories,
)


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                collect_expert_trajectories,
                inputs=["params:environment", "params:ingestion", "params:reward"],
                outputs="expert_trajectories",
                name="collect_expert_trajectories",
            ),
            Node(
                load_external_trajectories,
                inputs="params:ingestion",
                outputs="external_trajectories",
                name="load_external_trajectories",
            ),
            Node(
                combine_trajectories,
                inputs=["expert_trajectories", "external_trajectories"],
                outputs="trajectories",
                name="combine_trajectories",
            ),
            Node(
                summarize_trajectories,
                inputs="trajectories",
                outputs="episode_summary",
                name="summarize_trajectories",
            ),
        ]
    )

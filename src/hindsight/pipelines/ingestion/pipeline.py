"""Wiring of the ingestion stage."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.ingestion.nodes import (
    collect_expert_trajectories,
    combine_trajectories,
    load_external_trajectories,
    summarize_trajectories,
)
from hindsight.pipelines.settings import stage_pipeline


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "ingestion",
        [
            Node(
                collect_expert_trajectories,
                inputs=["project_settings", "ingestion_settings"],
                outputs="expert_trajectories",
                name="collect_expert_trajectories",
            ),
            Node(
                load_external_trajectories,
                inputs=["project_settings", "ingestion_settings"],
                outputs="external_trajectories",
                name="load_external_trajectories",
            ),
            Node(
                combine_trajectories,
                inputs=["expert_trajectories", "external_trajectories"],
                outputs="trajectories",
                name="combine_trajectories",
            ),
            Node(summarize_trajectories, inputs="trajectories", outputs="episode_summary", name="summarize_trajectories"),
        ],
    )

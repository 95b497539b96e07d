"""Wiring of the ingestion stage.

The external files are read first and the expert episodes collected after them, both into
memory; ``combine_trajectories`` checks everything and only then returns the versioned
tables (``expert_trajectories``, ``external_trajectories``, ``trajectories`` and the
``screenshots`` of their steps: empty for text environments), so bad input stops the run
before any dataset version is written.
"""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.ingestion.nodes import (
    collect_expert_trajectories,
    combine_trajectories,
    load_external_trajectories,
    summarize_trajectories,
)
from hindsight.pipelines.settings_nodes import stage_pipeline


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "ingestion",
        [
            Node(
                load_external_trajectories,
                inputs=["project_settings", "ingestion_settings"],
                outputs=["external_checked", "external_screenshots_checked"],
                name="load_external_trajectories",
            ),
            Node(
                collect_expert_trajectories,
                inputs=["project_settings", "ingestion_settings", "external_checked"],
                outputs=["expert_collected", "expert_screenshots_collected"],
                name="collect_expert_trajectories",
            ),
            Node(
                combine_trajectories,
                inputs=["expert_collected", "external_checked", "expert_screenshots_collected", "external_screenshots_checked"],
                outputs=["expert_trajectories", "external_trajectories", "trajectories", "screenshots"],
                name="combine_trajectories",
            ),
            Node(summarize_trajectories, inputs="trajectories", outputs="episode_summary", name="summarize_trajectories"),
        ],
    )

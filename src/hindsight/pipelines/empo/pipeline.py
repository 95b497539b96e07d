"""Wiring of the EMPO stage: ingested trajectories + the behaviour-cloned policy in, the
EMPO policy, its history, last replay rollout and semi-online evaluations out."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.empo.nodes import train_with_empo
from hindsight.pipelines.settings_nodes import stage_pipeline


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "empo",
        [
            Node(
                train_with_empo,
                inputs=["base_policy", "trajectories", "project_settings", "empo_settings"],
                outputs=["empo_policy", "empo_history", "empo_last_rollout", "empo_semi_online"],
                name="train_with_empo",
            ),
        ],
    )

"""Wiring of the behaviour-cloning stage."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples, build_initial_policy, train_base_policy
from hindsight.pipelines.settings import stage_pipeline


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "behaviour_cloning",
        [
            Node(
                behaviour_cloning_examples,
                inputs=["trajectories", "project_settings"],
                outputs="bc_examples",
                name="make_behaviour_cloning_examples",
            ),
            Node(
                build_initial_policy,
                inputs=["bc_examples", "project_settings", "behaviour_cloning_settings", "pretrained_model@path"],
                outputs="initial_policy",
                name="build_initial_policy",
            ),
            Node(
                train_base_policy,
                inputs=["initial_policy", "bc_examples", "project_settings", "behaviour_cloning_settings"],
                outputs=["base_policy", "bc_history"],
                name="train_base_policy",
            ),
        ],
    )

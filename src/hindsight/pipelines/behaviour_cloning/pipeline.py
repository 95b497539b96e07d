"""Wiring of the behaviour-cloning stage."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.behaviour_cloning.nodes import (
    behaviour_cloning_examples,
    build_initial_policy,
    pretrained_policy,
    train_base_policy,
)
from hindsight.pipelines.settings_nodes import stage_pipeline


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
                inputs=["initial_policy", "bc_examples", "project_settings", "behaviour_cloning_settings", "screenshots"],
                outputs=["base_policy", "bc_history"],
                name="train_base_policy",
            ),
        ],
    )


def create_pretrained_policy_pipeline(output: str) -> Pipeline:
    """The stage's settings and the catalog's newest ``pretrained_model`` loaded as the policy
    ``output`` (``behaviour_cloning.policy.lora`` on it, no training): the zero-shot start."""
    return stage_pipeline(
        "behaviour_cloning",
        [
            Node(
                pretrained_policy,
                inputs=["pretrained_model@path", "behaviour_cloning_settings"],
                outputs=output,
                name="load_pretrained_policy",
            ),
        ],
    )

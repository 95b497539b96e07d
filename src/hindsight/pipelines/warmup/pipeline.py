"""Wiring of the warm-up pipeline."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.warmup.nodes import (
    behaviour_cloning_examples,
    build_initial_policy,
    combine_histories,
    stage1_examples,
    train_base_policy,
    train_stage1_policy,
)


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(
                behaviour_cloning_examples,
                inputs=["trajectories", "params:prompt"],
                outputs="bc_examples",
                name="make_behaviour_cloning_examples",
            ),
            Node(
                build_initial_policy,
                inputs=["trajectories", "params:warmup", "params:prompt", "params:seed"],
                outputs="initial_policy",
                name="build_initial_policy",
            ),
            Node(
                train_base_policy,
                inputs=["initial_policy", "bc_examples", "params:warmup"],
                outputs=["base_policy", "bc_history"],
                name="behaviour_cloning",
            ),
            Node(
                stage1_examples,
                inputs=["bc_examples", "skills", "analyzer_sft_set", "params:warmup"],
                outputs="stage1_examples",
                name="make_stage1_examples",
            ),
            Node(
                train_stage1_policy,
                inputs=["base_policy", "stage1_examples", "params:warmup"],
                outputs=["warmup_policy", "stage1_history"],
                name="stage1_training",
            ),
            Node(
                combine_histories,
                inputs=["bc_history", "stage1_history"],
                outputs="warmup_history",
                name="combine_warmup_histories",
            ),
        ]
    )

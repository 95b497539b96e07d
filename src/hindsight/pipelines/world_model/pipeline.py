"""Wiring of the world-model stage and of WM-R1 training."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.settings_nodes import read_settings, stage_pipeline
from hindsight.pipelines.world_model.calibration_nodes import (
    imagine_heldout_starts,
    judge_heldout_endings,
    play_policy_for_world_model,
    report_calibration,
    world_model_start_policy,
)
from hindsight.pipelines.world_model.nodes import (
    build_world_model,
    evaluate_world_model,
    explore_for_world_model,
    train_in_world_model,
    train_world_model,
    world_model_episodes,
    world_model_examples,
    world_model_simulator,
)


def create_pipeline(**kwargs) -> Pipeline:
    """The world model: the real episodes it learns from (gold, rollouts, random, the start
    policy's own) -> examples -> model -> SFT -> held-out scores and its calibration on the
    start policy's held-out episodes."""
    return stage_pipeline(
        "world_model",
        [
            Node(explore_for_world_model, inputs=["project_settings", "world_model_settings"], outputs="world_model_exploration", name="explore_for_world_model"),
            Node(
                world_model_start_policy, inputs=["stage1_policy", "base_policy", "world_model_settings"],
                outputs="world_model_start_policy", name="world_model_start_policy",
            ),
            Node(
                play_policy_for_world_model, inputs=["world_model_start_policy", "project_settings", "world_model_settings"],
                outputs="world_model_policy_episodes", name="play_policy_for_world_model",
            ),
            Node(
                world_model_episodes,
                inputs=["trajectories", "skill_rollouts", "world_model_exploration", "world_model_policy_episodes", "world_model_settings"],
                outputs="world_model_episodes",
                name="world_model_episodes",
            ),
            Node(world_model_examples, inputs=["world_model_episodes", "project_settings", "world_model_settings"], outputs="world_model_examples", name="make_world_model_examples"),
            Node(build_world_model, inputs=["world_model_examples", "project_settings", "world_model_settings"], outputs="initial_world_model", name="build_world_model"),
            Node(
                train_world_model,
                inputs=["initial_world_model", "world_model_examples", "project_settings", "world_model_settings"],
                outputs=["world_model", "world_model_history"],
                name="train_world_model",
            ),
            Node(evaluate_world_model, inputs=["world_model", "world_model_examples", "world_model_settings"], outputs="world_model_evaluation", name="evaluate_world_model"),
            *_calibration_nodes(),
        ],
    )


def _calibration_nodes() -> list[Node]:
    """The world model's judgement on the start policy's held-out real episodes."""
    return [
        Node(
            judge_heldout_endings, inputs=["world_model", "world_model_policy_episodes", "project_settings", "world_model_settings"],
            outputs="world_model_endings", name="judge_heldout_endings",
        ),
        Node(
            world_model_simulator, inputs=["world_model", "trajectories", "skill_rollouts", "world_model_settings"],
            outputs="calibration_simulator", name="calibration_simulator",
        ),
        Node(
            imagine_heldout_starts,
            inputs=["calibration_simulator", "world_model_start_policy", "world_model_policy_episodes", "project_settings", "world_model_settings"],
            outputs="world_model_imagined", name="imagine_heldout_starts",
        ),
        Node(
            report_calibration, inputs=["world_model_endings", "world_model_imagined", "world_model_policy_episodes"],
            outputs="world_model_calibration", name="report_calibration",
        ),
    ]


def create_wmr1_pipeline(**kwargs) -> Pipeline:
    """WM-R1: the policy trained inside the world model (reads the newest ``world_model``)."""
    nodes = [
        read_settings("training", name="read_training_settings"),  # this stage reads two blocks
        read_settings("world_model", name="read_world_model_settings"),
        Node(world_model_simulator, inputs=["world_model", "trajectories", "skill_rollouts", "world_model_settings"], outputs="world_model_simulator", name="world_model_simulator"),
        Node(
            train_in_world_model,
            inputs=["stage1_policy", "base_policy", "world_model_simulator", "project_settings", "training_settings"],
            outputs=["rl_policy", "training_history", "training_last_rollout"],
            name="train_in_world_model",
        ),
    ]
    return Pipeline([node.tag("wmr1") for node in nodes], namespace="wmr1", prefix_datasets_with_namespace=False)

"""Wiring of the State2State stage, and the training stage started from its checkpoint."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.settings_nodes import stage_pipeline
from hindsight.pipelines.state2state.nodes import explore_reached_states, make_goal_tasks, train_on_state2state


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "state2state",
        [
            Node(
                explore_reached_states,
                inputs=["base_policy", "project_settings", "state2state_settings"],
                outputs="state2state_reached_states",
                name="explore_reached_states",
            ),
            Node(
                make_goal_tasks,
                inputs=["state2state_reached_states", "project_settings", "state2state_settings"],
                outputs="state2state_tasks",
                name="make_goal_tasks",
            ),
            Node(
                train_on_state2state,
                inputs=["base_policy", "state2state_tasks", "project_settings", "state2state_settings"],
                outputs=["state2state_policy", "state2state_history"],
                name="train_on_state2state",
            ),
        ],
    )


def training_from_state2state(training: Pipeline) -> Pipeline:
    """The training stage with its starting checkpoint (whichever ``training.start_from``
    names) replaced by the State2State checkpoint: RL on the real tasks after the stage."""
    return Pipeline(training, inputs={"stage1_policy": "state2state_policy", "base_policy": "state2state_policy"})

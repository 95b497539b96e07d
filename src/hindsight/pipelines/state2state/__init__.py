"""State2State: a mid-training stage of goal-reaching tasks made from explored states
(explore -> versioned task set -> RL on the goal tasks from the base policy)."""

from hindsight.pipelines.state2state.pipeline import create_pipeline, training_from_state2state

__all__ = ["create_pipeline", "training_from_state2state"]

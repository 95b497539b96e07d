"""The world-model stage (WM-R1): learn (history, action) -> next observation, score it on
held-out episodes; and the WM-R1 stage that trains the policy inside it."""

from hindsight.pipelines.world_model.pipeline import create_pipeline, create_wmr1_pipeline

__all__ = ["create_pipeline", "create_wmr1_pipeline"]

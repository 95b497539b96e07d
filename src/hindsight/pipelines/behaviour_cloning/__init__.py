"""Behaviour cloning: build (or load) the policy and clone the expert steps -> the base policy."""

from hindsight.pipelines.behaviour_cloning.pipeline import create_pipeline, create_pretrained_policy_pipeline

__all__ = ["create_pipeline", "create_pretrained_policy_pipeline"]

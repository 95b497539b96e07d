"""Warm-up: behaviour cloning on expert trajectories (the base policy), then Stage 1 of SEED
(skill-conditioned behaviour cloning + analyzer SFT) -> the Stage-1 checkpoint."""

from hindsight.pipelines.warmup.pipeline import create_pipeline

__all__ = ["create_pipeline"]

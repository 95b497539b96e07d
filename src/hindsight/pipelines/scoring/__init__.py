"""Scoring: token-level distillation signals (plain vs skill-augmented log-probs, gap, gate)
of a trajectory table and its skills, under the Stage-1 policy."""

from hindsight.pipelines.scoring.pipeline import create_pipeline

__all__ = ["create_pipeline"]

"""Experiments: baselines, ablations and data efficiency as one grid of RL runs (each an
MLflow child run), with paper-style tables, learning curves and a report."""

from hindsight.pipelines.experiments.pipeline import create_pipeline

__all__ = ["create_pipeline"]

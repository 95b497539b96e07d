"""Project pipelines: every stage alone, and the default end-to-end run."""

from __future__ import annotations

from kedro.framework.project import find_pipelines
from kedro.pipeline import Pipeline

DEFAULT_STAGES = ("ingestion", "skills", "warmup", "training", "evaluation")


def register_pipelines() -> dict[str, Pipeline]:
    """Register each stage's pipeline; ``__default__`` chains the stages of the default run.

    Returns:
        A mapping from pipeline names to ``Pipeline`` objects.
    """
    pipelines = find_pipelines(raise_errors=True)
    stages = [pipelines[name] for name in DEFAULT_STAGES if name in pipelines]
    pipelines["__default__"] = sum(stages, Pipeline([]))
    return pipelines

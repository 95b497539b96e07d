"""Ingestion: expert trajectories from the environments' gold paths plus external files,
validated at the boundary, into the versioned trajectory table."""

from hindsight.pipelines.ingestion.pipeline import create_pipeline

__all__ = ["create_pipeline"]

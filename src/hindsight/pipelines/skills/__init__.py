"""Skills (Stage 1 of SEED): the base policy plays the training tasks, a teacher writes a
hindsight skill for every finished episode, a validation filter keeps the skills that help,
and the kept ones become the analyzer SFT set."""

from hindsight.pipelines.skills.pipeline import create_pipeline

__all__ = ["create_pipeline"]

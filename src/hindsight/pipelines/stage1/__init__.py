"""Stage 1 of SEED: the base policy trained on behaviour cloning, skill-conditioned behaviour
cloning and analyzer SFT -> the Stage-1 checkpoint (the start of RL and its KL reference)."""

from hindsight.pipelines.stage1.pipeline import create_pipeline, create_premise_pipeline

__all__ = ["create_pipeline", "create_premise_pipeline"]

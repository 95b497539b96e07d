"""Training: the RL loop (SEED, GRPO, GiGPO, OPID) from the warm-up checkpoint, with
held-out evaluation and resumable checkpoints every K updates."""

from hindsight.pipelines.training.pipeline import create_pipeline

__all__ = ["create_pipeline"]

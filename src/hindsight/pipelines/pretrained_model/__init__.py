"""The pretrained-model stage: the pretrained route's weights as a versioned catalog dataset."""

from hindsight.pipelines.pretrained_model.pipeline import create_pipeline

__all__ = ["create_pipeline"]

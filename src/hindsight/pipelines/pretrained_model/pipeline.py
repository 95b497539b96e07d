"""Wiring of the pretrained-model stage."""

from kedro.pipeline import Node, Pipeline

from hindsight.pipelines.pretrained_model.nodes import import_pretrained_model
from hindsight.pipelines.settings_nodes import stage_pipeline


def create_pipeline(**kwargs) -> Pipeline:
    return stage_pipeline(
        "pretrained_model",
        [
            Node(
                import_pretrained_model,
                inputs="pretrained_model_settings",
                outputs="pretrained_model",
                name="import_pretrained_model",
            ),
        ],
    )

"""The settings nodes: where parameter dictionaries become typed settings.

``shared_settings()`` is the pipeline of one node that builds ``project_settings`` (the
``ProjectConfig`` of ``parameters.yml``); every runnable pipeline starts with it.
``read_settings(block)`` is the node at the head of each stage that builds
``<block>_settings`` from ``parameters_<block>.yml``. No other node takes ``params:``.
"""

from __future__ import annotations

from typing import Any

from kedro.pipeline import Node, Pipeline

from hindsight.config import STAGE_FILES, ProjectConfig
from hindsight.config.files import project_settings
from hindsight.params import build


def read_project_settings(seed: int, environment: dict, rollout: dict, analyzer: dict) -> ProjectConfig:
    """The shared settings (``parameters.yml``) as one typed object."""
    return project_settings({"seed": seed, "environment": environment, "rollout": rollout, "analyzer": analyzer})


def shared_settings() -> Pipeline:
    """The one node building ``project_settings``, in the ``settings`` namespace."""
    node = Node(
        read_project_settings,
        inputs=["params:seed", "params:environment", "params:rollout", "params:analyzer"],
        outputs="project_settings",
        name="read_project_settings",
        tags=["settings"],
    )
    return Pipeline([node], namespace="settings", prefix_datasets_with_namespace=False)


def read_settings(block: str, name: str = "read_settings") -> Node:
    """A node building ``<block>_settings`` (its ``STAGE_FILES`` dataclass) from ``params:<block>``
    (``name``: another node name, for a stage that reads more than one block)."""
    settings_class = STAGE_FILES[block]

    def read(params: dict[str, Any]):
        return build(settings_class, params, block)

    read.__name__ = read.__qualname__ = f"read_{block}_settings"
    read.__doc__ = f"``parameters_{block}.yml`` as a ``{settings_class.__name__}``."
    return Node(read, inputs=f"params:{block}", outputs=f"{block}_settings", name=name, tags=[block])


def stage_pipeline(block: str, nodes: list[Node]) -> Pipeline:
    """A stage: its settings node and its nodes, as one namespace (one box in kedro-viz)
    with catalog names unprefixed, every node tagged with the stage."""
    tagged = [node.tag(block) for node in nodes]
    return Pipeline([read_settings(block), *tagged], namespace=block, prefix_datasets_with_namespace=False)

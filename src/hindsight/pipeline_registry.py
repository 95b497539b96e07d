"""Project pipelines: each stage alone, the default end-to-end run, and the experiment grid.

Stages run in this order, each a Kedro namespace (one collapsible box in kedro-viz):

    ingestion -> behaviour_cloning -> skills -> stage1 -> training -> evaluation

``__default__`` is their sum; ``scoring`` reads the skills stage's outputs; ``experiments``
is the stages up to Stage 1 plus the grid. ``world_model`` trains WM-R1's world model on the
trajectories and the skills stage's rollouts; ``wmr1`` trains the policy inside it (then
``evaluation`` scores it on the real environment). Every runnable pipeline starts with the
``settings`` node that builds the shared settings.
"""

from __future__ import annotations

from kedro.pipeline import Pipeline

from hindsight.pipelines import behaviour_cloning, evaluation, experiments, ingestion, scoring, skills, stage1, training, world_model
from hindsight.pipelines.settings import shared_settings

STAGES = {
    "ingestion": ingestion,
    "behaviour_cloning": behaviour_cloning,
    "skills": skills,
    "stage1": stage1,
    "training": training,
    "evaluation": evaluation,
}
"""The default run's stages, in run order."""


def register_pipelines() -> dict[str, Pipeline]:
    """Register each stage alone, ``__default__`` (all stages), ``scoring``, ``experiments``,
    ``world_model`` and ``wmr1``.

    Returns:
        A mapping from pipeline names to ``Pipeline`` objects.
    """
    shared = shared_settings()
    stages = {name: module.create_pipeline() for name, module in STAGES.items()}
    pipelines = {name: shared + stage for name, stage in stages.items()}
    pipelines["__default__"] = sum(stages.values(), shared)
    pipelines["scoring"] = shared + scoring.create_pipeline()
    before_training = [stages[name] for name in ("ingestion", "behaviour_cloning", "skills", "stage1")]
    pipelines["experiments"] = sum(before_training, shared) + experiments.create_pipeline()
    pipelines["world_model"] = shared + world_model.create_pipeline()
    pipelines["wmr1"] = shared + world_model.create_wmr1_pipeline()
    return pipelines

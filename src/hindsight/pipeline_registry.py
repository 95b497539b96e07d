"""Project pipelines: each stage alone, the default end-to-end run, and the experiment grid.

Stages run in this order, each a Kedro namespace (one collapsible box in kedro-viz):

    ingestion -> behaviour_cloning -> skills -> stage1 -> training -> evaluation

``__default__`` is their sum; ``scoring`` reads the skills stage's outputs; ``experiments``
is the stages up to Stage 1 plus the grid (which reads the catalog's ``world_model`` and
``state2state_policy`` when its preset lists ``wmr1`` or ``grpo_state2state``). ``empo`` trains the behaviour-cloned policy on the
ingested expert trajectories with no environment. ``world_model`` trains WM-R1's world model
on the trajectories and the skills stage's rollouts; ``wmr1`` trains the policy inside it
(then ``evaluation`` scores it on the real environment). ``pretrained_model`` converts the
pretrained route's weights once into the catalog (``kedro run --env pretrained`` then starts
behaviour cloning from them); ``premise_zero_shot`` is Stage 1's premise check on that
model as it is, with no behaviour cloning, skills stage or Stage 1 (``conf/hidden_rooms_135m``:
SmolLM2-135M-Instruct zero-shot on hidden rooms, in pieces a rerun resumes);
``premise_behaviour_cloned`` is ingestion, behaviour cloning and that premise check on the
behaviour-cloned policy, no skills stage or Stage 1 (``conf/hidden_rooms_135m_bc``). ``state2state`` is the State2State
mid-training stage alone (from the catalog's base policy); ``training_from_state2state`` is
the training stage started from the catalog's State2State checkpoint; ``with_state2state`` is
the default run with the State2State stage before training. Every runnable pipeline starts with the
``settings`` node that builds the shared settings.
"""

from __future__ import annotations

from kedro.pipeline import Pipeline

from hindsight.pipelines import (
    behaviour_cloning,
    empo,
    evaluation,
    experiments,
    ingestion,
    pretrained_model,
    scoring,
    skills,
    stage1,
    state2state,
    training,
    world_model,
)
from hindsight.pipelines.settings_nodes import shared_settings

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
    ``empo``, ``world_model``, ``wmr1``, ``pretrained_model``, ``premise_zero_shot``,
    ``premise_behaviour_cloned`` and the State2State pipelines.

    Returns:
        A mapping from pipeline names to ``Pipeline`` objects.
    """
    shared = shared_settings()
    stages = {name: module.create_pipeline() for name, module in STAGES.items()}
    pipelines = {name: shared + stage for name, stage in stages.items()}
    pipelines["__default__"] = sum(stages.values(), shared)
    pipelines["scoring"] = shared + scoring.create_pipeline()
    pipelines["empo"] = shared + empo.create_pipeline()
    before_training = [stages[name] for name in ("ingestion", "behaviour_cloning", "skills", "stage1")]
    pipelines["experiments"] = sum(before_training, shared) + experiments.create_pipeline()
    mid_training = state2state.create_pipeline()
    pipelines["state2state"] = shared + mid_training
    from_checkpoint = state2state.training_from_state2state(stages["training"])
    pipelines["training_from_state2state"] = shared + from_checkpoint
    pipelines["with_state2state"] = sum(before_training, shared) + mid_training + from_checkpoint + stages["evaluation"]
    pipelines["world_model"] = shared + world_model.create_pipeline()
    pipelines["wmr1"] = shared + world_model.create_wmr1_pipeline()
    pipelines["pretrained_model"] = shared + pretrained_model.create_pipeline()
    pipelines["premise_zero_shot"] = (
        shared
        + behaviour_cloning.create_pretrained_policy_pipeline("zero_shot_policy")
        + stage1.create_premise_pipeline("zero_shot_policy", ("zero_shot_premise", "zero_shot_premise_summary", "zero_shot_premise_ranking"))
    )
    pipelines["premise_behaviour_cloned"] = sum(before_training[:2], shared) + stage1.create_premise_pipeline(
        "base_policy", ("behaviour_cloned_premise", "behaviour_cloned_premise_summary", "behaviour_cloned_premise_ranking")
    )
    return pipelines

"""Which parameters file holds which settings: one dataclass per ``parameters*.yml``.

``parameters.yml`` holds the shared blocks (the fields of ``ProjectConfig``); every other
file holds one block named after its stage. ``check_parameters`` builds them all from the
merged parameters before a run starts, so a misspelt key (in a file or a ``--params``
override) stops the run at once, naming the key and the file.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Mapping

from hindsight.config.empo_stage import EmpoConfig
from hindsight.config.experiments import ExperimentsConfig, GridSettings
from hindsight.config.pretrained import PretrainedModelConfig
from hindsight.config.project import ProjectConfig
from hindsight.config.state2state import State2StateConfig
from hindsight.config.skill_stages import SkillsConfig, Stage1Config
from hindsight.config.stages import (
    BehaviourCloningConfig,
    EvaluationConfig,
    IngestionConfig,
    ScoringConfig,
    TrainingConfig,
)
from hindsight.config.world_model import WorldModelConfig
from hindsight.params import ParameterError, build, register_file_lookup

STAGE_FILES: dict[str, type] = {
    "ingestion": IngestionConfig,
    "behaviour_cloning": BehaviourCloningConfig,
    "skills": SkillsConfig,
    "stage1": Stage1Config,
    "training": TrainingConfig,
    "scoring": ScoringConfig,
    "evaluation": EvaluationConfig,
    "experiments": ExperimentsConfig,
    "empo": EmpoConfig,
    "state2state": State2StateConfig,
    "world_model": WorldModelConfig,
    "pretrained_model": PretrainedModelConfig,
}
"""Top-level block -> its dataclass; the block lives in ``parameters_<block>.yml``."""

SHARED_FILE = "parameters.yml"


def file_of_key(top_level_key: str) -> str:
    """The parameters file a top-level key belongs to (``training`` -> ``parameters_training.yml``)."""
    if top_level_key in STAGE_FILES:
        return f"conf/<env>/parameters_{top_level_key}.yml"
    return f"conf/<env>/{SHARED_FILE}"


register_file_lookup(file_of_key)  # ParameterError messages name the file of the key


def file_settings() -> dict[str, tuple[str | None, type]]:
    """Each file name -> (its block key, or None for the shared file; its dataclass)."""
    files: dict[str, tuple[str | None, type]] = {SHARED_FILE: (None, ProjectConfig)}
    files.update({f"parameters_{key}.yml": (key, cls) for key, cls in STAGE_FILES.items()})
    return files


def project_settings(params: Mapping[str, Any]) -> ProjectConfig:
    """The shared settings from the merged parameters."""
    shared = {f.name: params[f.name] for f in fields(ProjectConfig) if f.name in params}
    return build(ProjectConfig, shared)


def check_parameters(params: Mapping[str, Any]) -> dict[str, Any]:
    """Build every settings object from the merged parameters (all files plus ``--params``).

    Returns:
        ``{"project": ProjectConfig, <stage>: <its dataclass>}``.

    Raises:
        ParameterError: A key no settings dataclass knows, or a value one rejects; the
            message names the key and the file.
    """
    known = {f.name for f in fields(ProjectConfig)} | set(STAGE_FILES)
    unknown = sorted(set(params) - known)
    if unknown:
        raise ParameterError(
            f"unknown top-level parameter(s) {unknown} (in a conf/<env>/parameters*.yml file or a --params override); "
            f"{SHARED_FILE} holds {sorted(f.name for f in fields(ProjectConfig))} and each parameters_<stage>.yml one "
            f"block named after its stage: {sorted(STAGE_FILES)}"
        )
    settings: dict[str, Any] = {"project": project_settings(params)}
    for key, cls in STAGE_FILES.items():
        settings[key] = build(cls, params.get(key), key)
    return settings


def grid_settings(training: Mapping[str, Any] | None, experiments: Mapping[str, Any] | None) -> GridSettings:
    """The experiment grid's settings from the ``training`` and ``experiments`` blocks."""
    return GridSettings(training=build(TrainingConfig, training, "training"), experiments=build(ExperimentsConfig, experiments, "experiments"))


def settings_datasets(params: Mapping[str, Any]) -> dict[str, Any]:
    """Every settings dataset the settings nodes produce, by catalog name
    (``project_settings``, ``<stage>_settings``, ``experiment_settings``)."""
    datasets = {f"{key}_settings": value for key, value in check_parameters(params).items()}
    datasets["experiment_settings"] = grid_settings(params.get("training"), params.get("experiments"))
    return datasets

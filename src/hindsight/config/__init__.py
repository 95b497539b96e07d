"""Typed settings: one documented dataclass per parameters file.

- ``project``: ``parameters.yml``, what every stage shares (seed, environment, rollout,
  analyzer) and the seeds derived from the one run seed;
- ``stages``: ``parameters_<stage>.yml``, one block per stage, in run order, except the
  skills stage and Stage 1 (``skill_stages``);
- ``experiments``: ``parameters_experiments.yml``, the experiment grid and its presets;
- ``empo_stage``, ``state2state``, ``world_model``, ``pretrained``: the stages outside the
  default run, one module and one parameters file each;
- ``files``: which file holds which block, and the check that runs before every run;
- ``rl``: an RL run's games, task pool and rollout settings from the above.

``docs/configuration.md``, every key and the setting names still declared by more than one
class (each with its reason), is generated from these classes (``tools/docgen/``).

Kedro hands nodes parameter dictionaries; each pipeline's ``read_settings`` node turns its
block into its dataclass (``hindsight.params.build``) and the stage's nodes take that object.

This package only composes: settings read by library code live next to that code
(``AnalyzerConfig``: ``hindsight.skills.analyzers``; ``RLConfig``, ``SFTConfig``, ``PromptConfig``,
``RolloutConfig`` and its ``SamplingConfig``, ``HeldoutPlay``, ``WorldModelSettings``, ...) and
are re-exported or held here, each under its own key (``rollout.sampling`` is
``ProjectConfig.rollout.sampling``). No library package below imports ``hindsight.config``
(the layers contract in ``pyproject.toml``, ``[tool.importlinter]``).
"""

from hindsight.config.empo_stage import EmpoConfig
from hindsight.config.experiments import ExperimentsConfig, GridPreset, GridSettings
from hindsight.config.files import STAGE_FILES, check_parameters, file_of_key, file_settings, project_settings
from hindsight.config.pretrained import PretrainedModelConfig
from hindsight.config.project import EnvironmentConfig, GameConfig, ProjectConfig, Seeds
from hindsight.config.rl import rl_setup
from hindsight.config.skill_stages import (
    OpenAIEndpointConfig,
    SkillsConfig,
    Stage1Config,
    TeacherFitConfig,
    ValidationConfig,
)
from hindsight.config.stages import (
    BehaviourCloningConfig,
    EvaluationConfig,
    HeldoutPlay,
    IngestionConfig,
    PolicyConfig,
    ScoringConfig,
    TrainingConfig,
)
from hindsight.config.state2state import State2StateConfig
from hindsight.config.world_model import WorldModelConfig
from hindsight.skills.analyzers import AnalyzerConfig

__all__ = [
    "STAGE_FILES",
    "AnalyzerConfig",
    "BehaviourCloningConfig",
    "EmpoConfig",
    "EnvironmentConfig",
    "EvaluationConfig",
    "ExperimentsConfig",
    "GameConfig",
    "GridPreset",
    "GridSettings",
    "HeldoutPlay",
    "IngestionConfig",
    "OpenAIEndpointConfig",
    "PolicyConfig",
    "PretrainedModelConfig",
    "ProjectConfig",
    "ScoringConfig",
    "Seeds",
    "SkillsConfig",
    "Stage1Config",
    "State2StateConfig",
    "TeacherFitConfig",
    "TrainingConfig",
    "ValidationConfig",
    "WorldModelConfig",
    "check_parameters",
    "file_of_key",
    "file_settings",
    "project_settings",
    "rl_setup",
]

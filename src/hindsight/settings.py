"""Kedro project settings: configuration environments (and the ``tracking`` settings file,
``hindsight.hooks.mlflow_run``) and project hooks."""

from hindsight.hooks import (
    DatasetLineageHooks,
    DataVersionHooks,
    EnvironmentCheckHooks,
    MemoryReleaseHooks,
    MissingInputHooks,
    ModelLoggingHooks,
    NodeResourceHooks,
    ReportArtifactHooks,
    ReproducibilityHooks,
    RunRecordHooks,
    SettingsHooks,
    SystemMetricsHooks,
    TrainingRunHooks,
)

HOOKS = (
    EnvironmentCheckHooks(),
    SystemMetricsHooks(),
    MissingInputHooks(),  # after SystemMetricsHooks: both run first, the last registered first
    TrainingRunHooks(),
    ReproducibilityHooks(),
    SettingsHooks(),
    RunRecordHooks(),
    DataVersionHooks(),
    DatasetLineageHooks(),
    ReportArtifactHooks(),
    ModelLoggingHooks(),
    MemoryReleaseHooks(),
    NodeResourceHooks(),
)

CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    "config_patterns": {
        "mlflow": ["mlflow*", "mlflow*/**"],
        "tracking": ["tracking*", "tracking*/**"],
    },
}

"""Kedro project settings: configuration environments and project hooks."""

from hindsight.hooks import (
    DataVersionHooks,
    EnvironmentCheckHooks,
    MemoryReleaseHooks,
    ModelLoggingHooks,
    NodeResourceHooks,
    ReportArtifactHooks,
    ReproducibilityHooks,
    RunRecordHooks,
    SettingsHooks,
)

HOOKS = (
    EnvironmentCheckHooks(),
    ReproducibilityHooks(),
    SettingsHooks(),
    RunRecordHooks(),
    DataVersionHooks(),
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
    },
}

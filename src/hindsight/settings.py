"""Kedro project settings: configuration environments and project hooks."""

from hindsight.hooks import (
    DataVersionHooks,
    EnvironmentCheckHooks,
    MemoryReleaseHooks,
    NodeResourceHooks,
    ReportArtifactHooks,
    ReproducibilityHooks,
    SettingsHooks,
)

HOOKS = (
    EnvironmentCheckHooks(),
    ReproducibilityHooks(),
    SettingsHooks(),
    DataVersionHooks(),
    ReportArtifactHooks(),
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

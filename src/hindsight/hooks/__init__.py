"""The project's Kedro hooks, in one place (registered in ``hindsight.settings``):

- ``run``: before a run, check the parameters and the machine's system needs (Java 17) and
  provide the settings a partial run skips; seed everything; tag the run with what
  reproduces it (commit, package versions, parameter hash); record data versions; log every
  report (08_reporting) and each trained policy (``model_logging``) to the MLflow run;
- ``resources``: time and peak memory per node, and freed memory handed back after each;
- ``model_logging``: a trained policy as an MLflow model linked to its run.
"""

from hindsight.hooks.resources import MemoryReleaseHooks, NodeResourceHooks
from hindsight.hooks.run import (
    DataVersionHooks,
    EnvironmentCheckHooks,
    ModelLoggingHooks,
    ReportArtifactHooks,
    ReproducibilityHooks,
    RunRecordHooks,
    SettingsHooks,
    run_record,
)

__all__ = [
    "DataVersionHooks",
    "EnvironmentCheckHooks",
    "MemoryReleaseHooks",
    "ModelLoggingHooks",
    "NodeResourceHooks",
    "ReportArtifactHooks",
    "ReproducibilityHooks",
    "RunRecordHooks",
    "SettingsHooks",
    "run_record",
]

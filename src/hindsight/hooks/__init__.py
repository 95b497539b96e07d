"""The project's Kedro hooks, in one place (registered in ``hindsight.settings``):

- ``prerequisites``: before a run, stop it when an input it reads from disk was never
  written, naming the commands that write it;
- ``run_lifecycle``: before a run, check the parameters and the machine's system needs (Java 17) and
  provide the settings a partial run skips; seed everything; tag the run with what
  reproduces it (commit, package versions, parameter hash); record data versions; log every
  report (08_reporting) and every checkpoint (``model_logging``) to the MLflow run;
- ``mlflow_run``: the experiment tagged as a training one, the run named after what ran,
  system metrics (``conf/<env>/tracking.yml``);
- ``lineage``: the datasets a run read and wrote, as its MLflow dataset inputs;
- ``resources``: time and peak memory per node, and freed memory handed back after each;
- ``model_logging``: a checkpoint as an MLflow model linked to its run.
"""

from hindsight.hooks.lineage import DatasetLineageHooks
from hindsight.hooks.mlflow_run import SystemMetricsHooks, TrainingRunHooks
from hindsight.hooks.prerequisites import MissingInputError, MissingInputHooks
from hindsight.hooks.resources import MemoryReleaseHooks, NodeResourceHooks
from hindsight.hooks.run_lifecycle import (
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
    "DatasetLineageHooks",
    "EnvironmentCheckHooks",
    "MemoryReleaseHooks",
    "MissingInputError",
    "MissingInputHooks",
    "ModelLoggingHooks",
    "NodeResourceHooks",
    "ReportArtifactHooks",
    "ReproducibilityHooks",
    "RunRecordHooks",
    "SettingsHooks",
    "SystemMetricsHooks",
    "TrainingRunHooks",
    "run_record",
]

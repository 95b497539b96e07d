"""The MLflow run as a training tool: the experiment opens on its training runs, each run is
named after what ran, and a long run records the machine's load.

- The experiment is tagged ``mlflow.experimentKind = custom_model_development``: the MLflow
  UI then opens it on its Training runs (not the GenAI views). ``conf/base/mlflow.yml`` sets
  the tag when kedro-mlflow creates the experiment; an experiment created before that is not
  re-created, so the tag is also set here at the start of every run.
- The run is named ``<pipeline> · <config env> · <local start time>`` (``default · base ·
  2026-12-04 05:40``) instead of kedro-mlflow's bare pipeline name (``__default__``), unless
  ``tracking.run.name`` in ``mlflow.yml`` names it.
- System metrics (``system/*``: CPU, memory, disk, network; GPU where ``pynvml`` is
  installed) are logged every ``system_metrics_interval_s`` seconds by MLflow's own monitor
  (one sampling thread, psutil), as set in ``conf/<env>/tracking.yml``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping

from kedro.framework.hooks import hook_impl

logger = logging.getLogger(__name__)

EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"
"""The MLflow UI's experiment kind for model training (its other kinds are GenAI ones)."""


@dataclass
class TrackingSettings:
    """``conf/<env>/tracking.yml``: what the project logs to MLflow besides kedro-mlflow's
    own logging (``mlflow.yml``). Not parameters: they do not change a result."""

    system_metrics: bool = True
    """Log ``system/*`` metrics during every run (MLflow's system metrics monitor)."""
    system_metrics_interval_s: float = 10.0
    """Seconds between two samples of the system metrics (each sample is logged)."""

    def __post_init__(self) -> None:
        if not self.system_metrics_interval_s > 0:
            raise ValueError(f"tracking.yml: system_metrics_interval_s must be positive, got {self.system_metrics_interval_s!r}")


def tracking_settings(values: Mapping[str, Any] | None) -> TrackingSettings:
    """``TrackingSettings`` from the ``tracking.yml`` mapping (None or empty: the defaults).

    Raises:
        ValueError: A key ``TrackingSettings`` does not know (the message lists the known).
    """
    values = dict(values or {})
    known = {field.name for field in fields(TrackingSettings)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in conf/<env>/tracking.yml; the known keys are {sorted(known)}")
    return TrackingSettings(**values)


def run_name(pipeline_names: list[str] | None, env: str | None, project_path: Path | None, now: datetime | None = None) -> str:
    """``<pipelines> · <config env> · <YYYY-MM-DD HH:MM>``: ``__default__`` reads ``default``;
    with no ``--env`` the configuration is ``base`` (``local`` when ``conf/local`` holds
    overrides, as Kedro then reads them)."""
    names = "+".join(name.strip("_") or name for name in (pipeline_names or ["__default__"]))
    if env is None:
        local = project_path / "conf" / "local" if project_path else None
        has_overrides = bool(local and local.is_dir() and any(local.glob("*.yml")))
        env = "local" if has_overrides else "base"
    return f"{names} · {env} · {(now or datetime.now()).strftime('%Y-%m-%d %H:%M')}"


def pipeline_names(run_params: Mapping[str, Any]) -> list[str]:
    """The pipelines a run runs, from its ``run_params`` (``__default__`` when none is named)."""
    names = run_params.get("pipeline_names") or run_params.get("pipeline_name") or ["__default__"]
    return [names] if isinstance(names, str) else list(names)


class SystemMetricsHooks:
    """Turn MLflow's system metrics on for the run when ``tracking.yml`` asks for them
    (``TrackingSettings``), and off again after it."""

    def __init__(self) -> None:
        self._settings = TrackingSettings()
        self._on = False

    @hook_impl
    def after_context_created(self, context) -> None:
        from kedro.config import MissingConfigException

        try:
            values = context.config_loader["tracking"]
        except (KeyError, MissingConfigException):  # no tracking.yml: the defaults
            values = {}
        self._settings = tracking_settings(values)

    @hook_impl(tryfirst=True)
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        """Before kedro-mlflow starts the run (``tryfirst``), so that MLflow starts its monitor
        with the run and stops it when the run ends."""
        if not self._settings.system_metrics:
            return
        import mlflow

        mlflow.set_system_metrics_sampling_interval(self._settings.system_metrics_interval_s)
        mlflow.set_system_metrics_samples_before_logging(1)
        mlflow.enable_system_metrics_logging()
        self._on = True

    @hook_impl
    def after_pipeline_run(self, run_params, pipeline, catalog) -> None:
        self._off()

    @hook_impl
    def on_pipeline_error(self, error, run_params, pipeline, catalog) -> None:
        self._off()

    def _off(self) -> None:
        if self._on:  # a later session of this process (a test, a notebook) chooses again
            import mlflow

            mlflow.disable_system_metrics_logging()
            mlflow.set_system_metrics_sampling_interval(None)
            mlflow.set_system_metrics_samples_before_logging(None)
            self._on = False


class TrainingRunHooks:
    """Tag the experiment as a training one and name the run after what ran, once
    kedro-mlflow has started it (``trylast``)."""

    def __init__(self) -> None:
        self._project_path: Path | None = None

    @hook_impl
    def after_context_created(self, context) -> None:
        self._project_path = Path(context.project_path)

    @hook_impl(trylast=True)
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        import mlflow

        run = mlflow.active_run()
        if run is None:  # tracking disabled for this pipeline
            return
        try:
            client = mlflow.MlflowClient()
            experiment = client.get_experiment(run.info.experiment_id)
            if experiment.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
                client.set_experiment_tag(run.info.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
            pipelines = pipeline_names(run_params)
            if run.info.run_name == "+".join(pipelines):  # kedro-mlflow's default, not a name set in mlflow.yml
                client.update_run(run.info.run_id, name=run_name(pipelines, run_params.get("env"), self._project_path))
        except Exception as error:  # noqa: BLE001 - a name is not worth a failed run
            logger.warning("Could not name the MLflow run or tag its experiment (%s: %s)", type(error).__name__, error)

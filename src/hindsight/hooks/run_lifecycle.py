"""Project hooks: check the parameters and the machine's system needs before a run starts,
provide the settings a partial run skips, seed everything, tag the run with what reproduces
it (commit, package versions, parameter hash), record data versions, log every report
(08_reporting) to the MLflow run and the trained policy as an MLflow model of the run
(``hooks.model_logging``). Time and memory per node: ``hooks.resources``.

The environments need a Java 17 runtime (TextWorldExpress and ScienceWorld run on the JVM),
and the MiniWoB++ web tasks Chromium and chromedriver; a missing one is reported before any
node runs, with how to install it, instead of as a traceback half-way through a run.
"""

from __future__ import annotations

import logging
import os
import random
from pathlib import Path

from kedro.framework.hooks import hook_impl

logger = logging.getLogger(__name__)

JAVA_ENVIRONMENTS = {"textworldexpress", "scienceworld"}


def _environments_in_use(params: dict) -> set[str]:
    """Environment families named anywhere in the parameters (``env: <name>`` entries)."""
    found: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "env" and isinstance(item, str):
                    found.add(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(params)
    return found


class EnvironmentCheckHooks:
    """Fail fast, with a clear message, when a parameter key is unknown (a misspelt key in a
    parameters file or a ``--params`` override: ``hindsight.config.check_parameters`` names
    it and its file) or a system need of the run is missing.

    A run on the MiniWoB++ web tasks also sets this process's browser limits from
    ``environment.browsers`` at its start, and at its end (or failure) ends the browsers
    kept idle and puts the limits back as they were."""

    def __init__(self) -> None:
        self._browsers_before = None

    @hook_impl
    def after_context_created(self, context) -> None:
        from hindsight.config import check_parameters

        settings = check_parameters(context.params)
        os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        threads = os.environ.get("HINDSIGHT_TORCH_THREADS")
        if threads:  # e.g. 1 per run when several runs share a small machine
            import torch

            torch.set_num_threads(int(threads))
        if _environments_in_use(context.params) & JAVA_ENVIRONMENTS:
            from hindsight.envs.java import check_java

            check_java()
        if "miniwob" in _environments_in_use(context.params):
            from hindsight.envs.miniwob import browser_pool, check_chromium, configure_browsers

            check_chromium()
            self._browsers_before = self._browsers_before or browser_pool().settings
            configure_browsers(settings["project"].environment.browsers)

    @hook_impl
    def after_pipeline_run(self) -> None:
        self._end_browsers()

    @hook_impl
    def on_pipeline_error(self) -> None:
        self._end_browsers()

    def _end_browsers(self) -> None:
        if self._browsers_before is None:
            return
        from hindsight.envs.miniwob import close_idle_browsers, configure_browsers

        closed = close_idle_browsers()
        if closed:
            logger.info("Ended %d idle Chromium browser(s) (environment.browsers.idle_browsers)", closed)
        configure_browsers(self._browsers_before)
        self._browsers_before = None


class SettingsHooks:
    """Provide the typed settings a partial run needs but does not build.

    Each stage's ``read_settings`` node builds its settings from the parameters. A run that
    starts mid-pipeline (``--from-nodes``, ``--nodes``) skips those nodes, and their
    in-memory outputs would be missing: they are built here from the same parameters.
    """

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        missing = {name for name in pipeline.inputs() if name.endswith("_settings")}
        if not missing:
            return
        from hindsight.config.files import settings_datasets

        for name, value in settings_datasets(catalog.load("parameters")).items():
            if name in missing:
                catalog[name] = value


class ReproducibilityHooks:
    """Seed Python, NumPy and torch from ``params:seed`` before the pipeline runs."""

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        try:
            seed = int(catalog.load("params:seed"))
        except Exception:  # no global seed parameter in this configuration
            return
        import numpy as np
        import torch

        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        logger.info("Seeded python, numpy and torch with %d", seed)


RECORDED_PACKAGES = ("textworld-express", "scienceworld", "textworld", "torch", "transformers", "peft", "kedro", "mlflow")


def _git(args: list[str], cwd: str) -> str | None:
    import subprocess

    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def run_record(params: dict, project_path: Path | None = None) -> dict[str, str]:
    """What reproduces a run, as MLflow tags: the git commit of the project, the installed
    versions of the environment and learning packages, and a hash of the resolved parameters.

    The commit says ``-dirty`` when the work tree differs from it (a tracked file changed or
    an untracked file not ignored), and then ``git.dirty`` lists the paths (``git status
    --porcelain``) and ``git.diff_sha1`` hashes the changes of tracked files, so a dirty run
    says what differed and two runs with the same edits can be matched. Nothing the run
    itself writes counts (run outputs are ignored; kedro-telemetry, which would append to
    ``pyproject.toml``, is declined in the committed ``.telemetry``)."""
    import hashlib
    import json
    from importlib.metadata import PackageNotFoundError, version

    tags = {"params.sha1": hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()}
    cwd = str(project_path or Path.cwd())
    commit = _git(["rev-parse", "HEAD"], cwd)
    status = _git(["status", "--porcelain"], cwd)
    if commit:
        dirty = bool(status and status.strip())
        tags["git.commit"] = commit.strip() + ("-dirty" if dirty else "")
        if dirty:
            tags["git.dirty"] = status.strip()[:4000]
            diff = _git(["diff", "HEAD", "--no-ext-diff", "--binary"], cwd) or ""
            tags["git.diff_sha1"] = hashlib.sha1(diff.encode()).hexdigest()
    else:
        tags["git.commit"] = "unknown (not a git work tree)"
    for package in RECORDED_PACKAGES:
        try:
            tags[f"version.{package}"] = version(package)
        except PackageNotFoundError:
            tags[f"version.{package}"] = "not installed"
    return tags


class RunRecordHooks:
    """Tag every MLflow run with ``run_record``: the commit of the project the session runs
    (its ``project_path``, wherever the process was started), the package versions and the
    parameter hash that produced it (logged at the first node, once the run is open)."""

    def __init__(self) -> None:
        self._params: dict | None = None
        self._project_path: Path | None = None

    @hook_impl
    def after_context_created(self, context) -> None:
        self._project_path = Path(context.project_path)

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        self._params = catalog.load("parameters")

    @hook_impl
    def before_node_run(self, node) -> None:
        if self._params is None:
            return
        from hindsight import tracking

        tracking.set_tags(run_record(self._params, self._project_path))
        self._params = None


def _version_of(dataset, save: bool) -> str | None:
    """The version folder a versioned dataset last read (or just wrote), None if unversioned."""
    from hindsight.hooks.lineage import dataset_location

    found = dataset_location(dataset, save)
    return found[1] if found else None


class DataVersionHooks:
    """Record the version of every versioned dataset a run loads or saves, as MLflow tags
    ``data_version.<dataset>``, so every number can be traced to the data behind it (a
    transcoded entry, ``world_model@optional``, under its dataset's name ``world_model``)."""

    def __init__(self) -> None:
        self._catalog = None

    @hook_impl
    def after_catalog_created(self, catalog) -> None:
        self._catalog = catalog

    def _record(self, name: str, save: bool) -> None:
        if self._catalog is None or name.startswith("params:") or name == "parameters":
            return
        try:
            version = _version_of(self._catalog.get(name), save)
        except Exception:
            return
        if version:
            from hindsight import tracking

            tracking.record_data_version(name.split("@")[0], version)

    @hook_impl
    def after_dataset_loaded(self, dataset_name: str, data, node) -> None:
        self._record(dataset_name, save=False)

    @hook_impl
    def after_dataset_saved(self, dataset_name: str, data, node) -> None:
        self._record(dataset_name, save=True)


class ReportArtifactHooks:
    """Log each saved report file (the ``08_reporting`` layer) to the active MLflow run.

    Reports are versioned Kedro datasets; wrapping a versioned dataset in kedro-mlflow's
    artifact dataset clashes on the save version, so the file is logged after it is saved.
    """

    def __init__(self) -> None:
        self._catalog = None

    @hook_impl
    def after_catalog_created(self, catalog) -> None:
        self._catalog = catalog

    @hook_impl
    def after_dataset_saved(self, dataset_name: str, data, node) -> None:
        if self._catalog is None:
            return
        dataset = self._catalog.get(dataset_name)
        describe = getattr(dataset, "_describe", lambda: {})()
        filepath = str(describe.get("filepath") or describe.get("path") or "")
        if "08_reporting" not in filepath:
            return
        try:
            path = Path(dataset._get_load_path())  # the version just written
        except Exception:  # unversioned
            path = Path(filepath)
        if path.is_file():
            from hindsight import tracking

            tracking.log_artifact(path, artifact_path="reports")


class ModelLoggingHooks:
    """Log every checkpoint the catalog saves (a ``ModelDirectoryDataset``) as an MLflow model
    of the run, and tag the run with the model's id (``logged_model.<dataset>``): the final
    policies (``model_logging.LOGGED_POLICIES``) whole, their final metrics linked to them;
    the others as references to their versioned directories (``hooks.model_logging``).

    The weights are already safe in their versioned dataset when this runs: a failure to log
    them to MLflow is reported as a warning (and a ``logged_model.<dataset>`` tag saying so),
    not raised, so the rest of the run (evaluation) still happens.
    """

    def __init__(self) -> None:
        self._catalog = None

    @hook_impl
    def after_catalog_created(self, catalog) -> None:
        self._catalog = catalog

    def _checkpoint_location(self, dataset_name: str) -> tuple[Path, str | None] | None:
        """The saved version's directory and version, if ``dataset_name`` is a checkpoint."""
        from hindsight.datasets import ModelDirectoryDataset
        from hindsight.hooks.lineage import dataset_location

        if self._catalog is None:
            return None
        try:
            dataset = self._catalog.get(dataset_name)
        except Exception:
            return None
        if not isinstance(dataset, ModelDirectoryDataset):
            return None
        return dataset_location(dataset, save=True)

    @hook_impl
    def after_dataset_saved(self, dataset_name: str, data, node) -> None:
        from hindsight.hooks.model_logging import LOGGED_POLICIES, log_checkpoint_reference, log_policy_model

        checkpoint = None if dataset_name in LOGGED_POLICIES else self._checkpoint_location(dataset_name)
        if dataset_name not in LOGGED_POLICIES and checkpoint is None:
            return
        from hindsight import tracking

        name = dataset_name.split("@")[0]
        step = int(getattr(data, "version", 0) or 0)
        try:
            if checkpoint is None:
                logged = log_policy_model(data, name, step=step)
            else:
                logged = log_checkpoint_reference(name, checkpoint[0], checkpoint[1], step=step)
        except Exception as error:  # noqa: BLE001 - tracking must not lose a finished training run
            logger.warning(
                "Could not log %s as an MLflow model (%s: %s); its weights are in the catalog",
                name, type(error).__name__, error,
            )
            tracking.set_tags({f"logged_model.{name}": f"failed: {type(error).__name__}: {error}"[:500]})
            return
        if logged is not None:
            tracking.set_tags({f"logged_model.{name}": logged.model_id})

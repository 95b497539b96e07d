"""Stop a run whose inputs no earlier run has written, saying which commands write them.

``kedro run --pipeline empo`` on a fresh clone would otherwise fail at its first node with
``DatasetError: base_policy: Did not find any versions for ModelDirectoryDataset(...)``
under a long traceback. Before anything starts (before kedro-mlflow opens a run:
``tryfirst``), ``MissingInputHooks`` checks every free input of the pipeline being run that
the catalog keeps on disk (any version of a versioned one); for the missing ones it finds
the smallest registered pipeline that writes each, and the ones that pipeline itself needs,
and raises ``MissingInputError`` with the commands in the order to run them::

    Pipeline 'empo' reads base_policy, trajectories, which no run has written yet:
    run first `kedro run --pipeline ingestion && kedro run --pipeline behaviour_cloning`
    (or `kedro run`, the default pipeline, which writes them too).

Inputs kept in memory (settings, which ``SettingsHooks`` provides), credentials and
``optional: true`` entries (their loads find None) are not checked.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import click
from kedro.framework.hooks import hook_impl

DEFAULT = "__default__"


class MissingInputError(click.ClickException):
    """Inputs of the run that no earlier run has written. A ``click.ClickException``, so
    ``kedro run`` prints its one-line message (``Error: ...``) instead of a traceback;
    elsewhere it is an ordinary exception."""


def _base(name: str) -> str:
    return name.split("@")[0]


def _checked(dataset) -> bool:
    """Whether a catalog dataset is kept on disk and must exist to be loaded."""
    if getattr(dataset, "_optional", False):
        return False
    try:
        described = dataset._describe()
    except Exception:
        return False
    return bool(described.get("filepath") or described.get("path"))


def missing_inputs(pipeline, catalog) -> list[str]:
    """The free inputs of ``pipeline`` that the catalog keeps on disk and that do not exist
    (no version of a versioned dataset), by name, sorted."""
    missing = []
    for name in sorted(pipeline.inputs()):
        if name == "parameters" or name.startswith("params:") or name not in catalog:
            continue
        dataset = catalog.get(name)
        if _checked(dataset) and not dataset.exists():
            missing.append(name)
    return missing


def producer(dataset: str, pipelines: Mapping[str, object], exclude: Iterable[str] = ()) -> str | None:
    """The registered pipeline with the fewest nodes that writes ``dataset`` (its base name),
    other than ``__default__`` and ``exclude``; None when none does."""
    skip = {DEFAULT, *exclude}
    writers = [
        (len(pipeline.nodes), name)
        for name, pipeline in pipelines.items()
        if name not in skip and _base(dataset) in {_base(output) for output in pipeline.all_outputs()}
    ]
    return min(writers)[1] if writers else None


def run_order(missing: Iterable[str], pipelines: Mapping[str, object], catalog, exclude: Iterable[str] = ()) -> list[str] | None:
    """The pipelines to run, in order, so that every ``missing`` dataset exists: each one's
    producer after the producers of its own missing inputs. None if one has no producer."""
    order: list[str] = []
    visiting: set[str] = set()

    def need(dataset: str) -> bool:
        writer = producer(dataset, pipelines, exclude)
        if writer is None:
            return False
        if writer in order or writer in visiting:
            return True
        visiting.add(writer)
        for upstream in missing_inputs(pipelines[writer], catalog):
            if not need(upstream):
                return False
        order.append(writer)
        return True

    return order if all(need(name) for name in missing) else None


def missing_message(pipeline_name: str, missing: list[str], order: list[str] | None, pipelines: Mapping[str, object], env: str | None) -> str:
    """One line: what the run reads that is missing and the commands that write it."""
    flag = f" --env {env}" if env else ""
    text = f"Pipeline '{pipeline_name}' reads {', '.join(missing)}, which no run has written yet"
    if not order:
        return text + ": no registered pipeline writes it; point the catalog entry at existing data."
    commands = " && ".join(f"kedro run --pipeline {name}{flag}" for name in order)
    text += f": run first `{commands}`"
    default = pipelines.get(DEFAULT)
    if default is not None and pipeline_name != DEFAULT:
        writes = {_base(output) for output in default.all_outputs()}
        if all(_base(name) in writes for name in missing):
            text += f" (or `kedro run{flag}`, the default pipeline, which writes them too)"
    return text + "."


class MissingInputHooks:
    """Raise ``MissingInputError`` before a run whose persisted inputs do not exist."""

    @hook_impl(tryfirst=True)
    def before_pipeline_run(self, run_params, pipeline, catalog) -> None:
        missing = missing_inputs(pipeline, catalog)
        if not missing:
            return
        from kedro.framework.project import pipelines as registered

        from hindsight.hooks.mlflow_run import pipeline_names

        names = pipeline_names(run_params)
        pipelines = dict(registered)
        order = run_order(missing, pipelines, catalog, exclude=names)
        raise MissingInputError(missing_message("+".join(names), missing, order, pipelines, run_params.get("env")))

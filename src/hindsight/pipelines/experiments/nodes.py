"""Nodes of the experiments pipeline: check and gather what the cells start from
(``hindsight.experiments.starts``), run the grid (``hindsight.experiments.grid``) and turn
its cells into the results table, the curves and the report
(``hindsight.experiments.report``)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from hindsight import tracking
from hindsight.config import EmpoConfig, GridSettings, ProjectConfig, WorldModelConfig
from hindsight.envs.world_model import RecordedTasks, WorldModelSimulator
from hindsight.experiments.report import (
    data_efficiency_plot,
    learning_curves_plot,
    markdown_report,
    results_table,
)
from hindsight.params import as_dict
from hindsight.skills.skill_bank import skill_bank_from_table
from hindsight.experiments.grid import Cell, GridSpec, cell_key, cell_rl_config, run_grid
from hindsight.experiments.starts import GridStarts, catalog_models_for
from hindsight.training.empo_run import empo_grid_setup
from hindsight.training.rl_run import heldout_evaluator, rl_setup, run_rl, weights_fingerprint

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _child_run(cell: Cell, key: str):
    """An MLflow child run under the pipeline's run (kedro-mlflow's), when one is active."""
    import mlflow

    if mlflow.active_run() is None:
        yield None
        return
    with mlflow.start_run(run_name=cell.name, nested=True, tags={"cell_key": key, "method": cell.method}) as run:
        mlflow.log_params({"method": cell.method, "seed": cell.seed, "task_fraction": cell.fraction})
        yield run.info.run_id


def _grid_spec(settings: GridSettings) -> GridSpec:
    preset = settings.experiments.grid
    return GridSpec(methods=list(preset.methods), seeds=list(preset.seeds), fractions=list(preset.fractions), fraction_methods=list(preset.fraction_methods))


def check_grid_inputs(state2state_policy, world_model, settings: GridSettings) -> dict[str, Any]:
    """The catalog's models that the preset's methods need (``experiments.starts``), checked
    at the start of the run: a missing one stops it, naming the command that makes it.

    Args:
        state2state_policy: The newest State2State checkpoint, None when there is none.
        world_model: The newest world model (a policy), None when there is none.
        settings: The grid's settings.

    Returns:
        ``{"state2state": ..., "world_model": ...}`` with the entries the methods need only.
    """
    experiments = settings.experiments
    grid = _grid_spec(settings)
    grid.cells()  # unknown method names stop the run here too, before any training
    return catalog_models_for(
        grid.methods, {"state2state": state2state_policy, "world_model": world_model}, where=f"experiments.presets.{experiments.preset}.methods"
    )


def grid_world_model(catalog_models: dict[str, Any], trajectories: pd.DataFrame, skill_rollouts: pd.DataFrame, settings: WorldModelConfig):
    """The catalog's models with the world model, when a listed method needs one, turned into
    the environment ``wmr1`` cells train in: the world model with the recorded tasks it
    starts from, as in the ``wmr1`` pipeline.

    Returns:
        ``catalog_models`` with ``world_model`` an ``envs.world_model.WorldModelSimulator``.
    """
    if "world_model" not in catalog_models:
        return dict(catalog_models)
    tasks = RecordedTasks(settings.recorded_episodes(trajectories, skill_rollouts))
    simulator = WorldModelSimulator(world_model=catalog_models["world_model"], tasks=tasks, settings=settings.query_settings())
    return {**catalog_models, "world_model": simulator}


def grid_starts(stage1_policy, base_policy, catalog_starts: dict[str, Any]) -> GridStarts:
    """Every checkpoint a cell may start from (by ``Method.start_from``) and the world model."""
    catalog = dict(catalog_starts)
    world_model = catalog.pop("world_model", None)
    return GridStarts(policies={"stage1": stage1_policy, "base": base_policy, **catalog}, world_model=world_model)


def run_experiment_grid(starts: GridStarts, skills: pd.DataFrame, project: ProjectConfig, settings: GridSettings):
    """Run every cell of the preset's grid (skipping cells finished earlier on the same data).

    A cell's key covers the base and Stage-1 weights and the skill bank, plus the weights of
    the catalog model it uses (the State2State checkpoint, the world model and its query
    settings), so a new version of one retrains only the cells that use it.

    Returns:
        (one row per cell: method, seed, fraction, status, run_id, seconds, final held-out
        success per split and task type; one row per cell and evaluation point: the
        learning-curve data).
    """
    preset = settings.experiments.grid
    grid = _grid_spec(settings)
    base_rl = dataclasses.replace(settings.training.rl, **preset.rl)
    setup = rl_setup(project, settings.training, preset.heldout)
    bank = skill_bank_from_table(skills)
    world_model = starts.world_model
    shared_inputs = "|".join(
        [weights_fingerprint(starts.policy("stage1").model), weights_fingerprint(starts.policy("base").model), str(sorted(bank.items()))]
    )
    extra_inputs = {start: weights_fingerprint(policy.model) for start, policy in starts.policies.items() if start not in ("stage1", "base")}
    if world_model is not None:
        extra_inputs["world_model"] = weights_fingerprint(world_model.world_model.model)

    def fingerprint(cell: Cell) -> str:
        start_from, rl = cell_rl_config(base_rl, cell)
        uses = [start_from] + (["world_model"] if rl.algorithm == "wmr1" else [])
        return "|".join([shared_inputs] + [extra_inputs[key] for key in uses if key in extra_inputs])

    cache = Path(settings.experiments.cache_dir)

    def settings_of(cell: Cell) -> dict[str, Any]:
        start_from, rl = cell_rl_config(base_rl, cell)
        shared = {k: v for k, v in as_dict(project).items() if k != "seed"}  # the cell's seed is its own
        settings = {"start_from": start_from, "rl": as_dict(rl), "heldout": as_dict(setup.heldout), "project": shared,
                    "pool": len(setup.pool)}
        if rl.algorithm == "wmr1" and world_model is not None:  # how the world model is queried
            settings["world_model"] = as_dict(world_model.settings)
        return settings

    start_evaluations: dict[str, dict[str, float]] = {}

    def run_cell(cell: Cell) -> dict[str, Any]:
        start_from, config = cell_rl_config(base_rl, cell)
        if start_from not in start_evaluations:  # same tasks and seed: once per checkpoint
            evaluate = heldout_evaluator(setup.specs, setup.rollout, setup.heldout)
            start_evaluations[start_from] = evaluate(starts.policy(start_from), 0)
        # EMPO replays the training tasks' gold episodes; recorded_steps: the env steps that recorded them
        cell_setup, recorded_steps = (setup, 0) if config.algorithm != "empo" else empo_grid_setup(setup, EmpoConfig(), cell.seed)
        result = run_rl(
            starts.policy(start_from), config, cell_setup,
            checkpoint_dir=cache / "checkpoints" / cell_key(cell, settings_of(cell), fingerprint(cell)),
            seed=cell.seed,
            skill_bank=bank,
            log_metrics=lambda metrics, step: tracking.log_metrics(metrics, step=step),
            evaluate_start=True,
            start_metrics=start_evaluations[start_from],
            world_model=world_model if config.algorithm == "wmr1" else None,
        )
        history = result.history
        final = history.iloc[-1]
        return {
            "history": history.to_dict("records"),
            "final": {k: float(v) for k, v in final.items() if k.startswith("eval/") and pd.notna(v)},
            "env_steps": float(recorded_steps or final.get("charts/env_steps_total", 0.0)),
        }

    records = run_grid(
        grid.cells(),
        run_cell,
        key_of=lambda cell: cell_key(cell, settings_of(cell), fingerprint(cell)),
        cache_dir=cache,
        start_child_run=_child_run,
    )
    cells, histories = [], []
    for record in records:
        result = record.get("result") or {}
        row = {k: record.get(k) for k in ("cell", "method", "seed", "fraction", "status", "run_id", "seconds", "key", "error")}
        row.update(result.get("final", {}))
        row["env_steps"] = result.get("env_steps")
        cells.append(row)
        for point in result.get("history", []):
            histories.append({"cell": record["cell"], "method": record["method"], "seed": record["seed"], "fraction": record["fraction"], **point})
    cells_table = pd.DataFrame(cells)
    failed = int((cells_table["status"] == "failed").sum())
    tracking.log_metrics({"experiments/cells": float(len(cells_table)), "experiments/failed_cells": float(failed)})
    tracking.set_tags({"experiments.preset": settings.experiments.preset})
    return cells_table, pd.DataFrame(histories)


def report_experiments(cells: pd.DataFrame, histories: pd.DataFrame, settings: GridSettings):
    """Results table (mean +- std over seeds), learning curves, data-efficiency plot, report.

    Returns:
        (results table, markdown report, learning-curves figure, data-efficiency figure).
    """
    results = results_table(cells)
    report = markdown_report(cells, results, preset=settings.experiments.preset, data_versions=tracking.data_versions(), histories=histories)
    print("\n" + report, flush=True)
    return results, report, learning_curves_plot(histories), data_efficiency_plot(cells)

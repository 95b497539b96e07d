"""Nodes of the experiments pipeline: run the grid (``hindsight.training.grid``) and turn
its cells into the results table, the curves and the report
(``hindsight.evaluation.experiments``)."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from hindsight import tracking
from hindsight.evaluation.experiments import (
    data_efficiency_plot,
    learning_curves_plot,
    markdown_report,
    results_table,
)
from hindsight.training.grid import Cell, GridSpec, cell_key, cell_training_params, run_grid
from hindsight.training.rl_config import RLConfig
from hindsight.training.rl_run import heldout_evaluator, rl_setup, run_rl, skill_bank_from_table, weights_fingerprint

logger = logging.getLogger(__name__)


def _preset(experiments: dict[str, Any]) -> dict[str, Any]:
    name = experiments.get("preset", "full")
    presets = experiments.get("presets") or {}
    if name not in presets:
        raise ValueError(f"experiments.preset={name!r} is not one of the presets {sorted(presets)}")
    return dict(presets[name])


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


def run_experiment_grid(
    warmup_policy,
    base_policy,
    skills: pd.DataFrame,
    experiments: dict[str, Any],
    training: dict[str, Any],
    environment: dict[str, Any],
    rollout: dict[str, Any],
    prompt: dict[str, Any],
    reward: dict[str, Any],
    evaluation: dict[str, Any],
    ingestion: dict[str, Any],
):
    """Run every cell of the preset's grid (skipping cells finished earlier on the same data).

    Returns:
        (one row per cell: method, seed, fraction, status, run_id, seconds, final held-out
        success per split and task type; one row per cell and evaluation point: the
        learning-curve data).
    """
    preset = _preset(experiments)
    grid = GridSpec(
        methods=list(preset.get("methods") or []),
        seeds=list(preset.get("seeds") or [0]),
        fractions=[float(f) for f in preset.get("fractions") or [1.0]],
        fraction_methods=list(preset.get("fraction_methods") or ["grpo", "seed"]),
    )
    base_training = {**training, "rl": {**(training.get("rl") or {}), **(preset.get("rl") or {})}}
    setup = rl_setup(environment, rollout, prompt, reward, evaluation, training, ingestion, preset.get("heldout"))
    specs, settings, heldout, pool = setup.specs, setup.rollout, setup.heldout, setup.pool
    bank = skill_bank_from_table(skills)
    starts = {"stage1": warmup_policy, "base": base_policy}
    fingerprint = "|".join(
        [weights_fingerprint(warmup_policy.model), weights_fingerprint(base_policy.model), str(sorted(bank.items()))]
    )
    cache = Path(experiments.get("cache_dir", "data/07_model_output/experiment_cells"))

    def settings_of(cell: Cell) -> dict[str, Any]:
        start_from, rl = cell_training_params(base_training, cell)
        return {"start_from": start_from, "rl": rl, "heldout": heldout.__dict__, "rollout": rollout, "prompt": prompt,
                "reward": reward, "environment": environment, "pool": len(pool)}

    start_evaluations: dict[str, dict[str, float]] = {}

    def run_cell(cell: Cell) -> dict[str, Any]:
        start_from, rl = cell_training_params(base_training, cell)
        config = RLConfig.from_params(rl)
        if start_from not in start_evaluations:  # same tasks and seed: once per checkpoint
            evaluate = heldout_evaluator(specs, settings, heldout)
            start_evaluations[start_from] = evaluate(starts[start_from], 0)
        result = run_rl(
            starts[start_from], config, pool, settings, specs, heldout,
            checkpoint_dir=cache / "checkpoints" / cell_key(cell, settings_of(cell), fingerprint),
            skill_bank=bank,
            log_metrics=lambda metrics, step: tracking.log_metrics(metrics, step=step),
            evaluate_start=True,
            start_metrics=start_evaluations[start_from],
        )
        history = result.history
        final = history.iloc[-1]
        return {
            "history": history.to_dict("records"),
            "final": {k: float(v) for k, v in final.items() if k.startswith("eval/") and pd.notna(v)},
            "env_steps": float(final.get("charts/env_steps_total", 0.0)),
        }

    records = run_grid(
        grid.cells(),
        run_cell,
        key_of=lambda cell: cell_key(cell, settings_of(cell), fingerprint),
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
    tracking.set_tags({"experiments.preset": experiments.get("preset", "full")})
    return cells_table, pd.DataFrame(histories)


def report_experiments(cells: pd.DataFrame, histories: pd.DataFrame, experiments: dict[str, Any]):
    """Results table (mean +- std over seeds), learning curves, data-efficiency plot, report.

    Returns:
        (results table, markdown report, learning-curves figure, data-efficiency figure).
    """
    results = results_table(cells)
    report = markdown_report(cells, results, preset=experiments.get("preset", "full"), data_versions=tracking.data_versions())
    print("\n" + report, flush=True)
    return results, report, learning_curves_plot(histories), data_efficiency_plot(cells)

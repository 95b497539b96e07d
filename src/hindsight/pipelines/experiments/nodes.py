"""Nodes of the experiments pipeline: check and gather what the cells start from
(``hindsight.experiments.starts``), run the grid (``hindsight.experiments.grid``) and turn
its cells into the results table, the curves and the report
(``hindsight.experiments.report``)."""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from hindsight import tracking
from hindsight.config import EmpoConfig, GridSettings, ProjectConfig, WorldModelConfig, rl_setup
from hindsight.experiments.curves_plot import curve_metrics, learning_curves_plot
from hindsight.experiments.grid import Cell, GridSpec, cell_key, cell_rl_config
from hindsight.experiments.paired import OUTCOME_COLUMNS, paired_against_markdown
from hindsight.experiments.provenance import cpu_model
from hindsight.experiments.report import data_efficiency_plot, markdown_report, results_table
from hindsight.experiments.resume import run_resumable_grid
from hindsight.experiments.sample_efficiency import episodes_to_level_markdown
from hindsight.experiments.starts import GridStarts, catalog_models_for
from hindsight.runs.empo_run import empo_grid_setup
from hindsight.methods.registry import method_class
from hindsight.runs.rl_run import run_rl
from hindsight.training.checkpoint import weights_fingerprint
from hindsight.training.end_selection import SELECTED_COLUMN
from hindsight.evaluation.heldout import heldout_evaluator
from hindsight.params import as_dict
from hindsight.skills.skill_bank import skill_bank_from_table
from hindsight.training.rl_config import RLConfig, with_overrides
from hindsight.world_model.environment import RecordedTasks, WorldModelSimulator

logger = logging.getLogger(__name__)


def _child_run_tags(cell: Cell, key: str, node: dict[str, Any] | None) -> dict[str, str]:
    tags = {"cell_key": key, "method": cell.method}
    if node:
        tags["hindsight.node"] = str(node.get("node"))
        if node.get("ray_node_id"):
            tags["ray.node_id"] = str(node["ray_node_id"])
    return tags


@contextlib.contextmanager
def _child_run(cell: Cell, key: str, node: dict[str, Any] | None = None):
    """An MLflow child run under the pipeline's run (kedro-mlflow's), when one is active,
    tagged with the node that runs it. An earlier run of the same cell still RUNNING is one
    whose worker died: it is marked KILLED, tagged with this run (``tracking.end_dead_runs_tagged``)."""
    import mlflow

    if mlflow.active_run() is None:
        yield None
        return
    with mlflow.start_run(run_name=cell.name, nested=True, tags=_child_run_tags(cell, key, node)) as run:
        mlflow.log_params({"method": cell.method, "seed": cell.seed, "task_fraction": cell.fraction})
        tracking.end_dead_runs_tagged("cell_key", key, "its grid worker died; the cell was run again")
        yield run.info.run_id


@dataclass(frozen=True)
class WorkerChildRun:
    """``_child_run`` for a cell on a Ray worker, a process with no active run: the child run
    is opened there, under the pipeline's run by id, on the same tracking store (an absolute
    URI: a SQLite file the workers reach, or a tracking server on a cluster)."""

    tracking_uri: str
    experiment_id: str
    parent_run_id: str

    @classmethod
    def of_active_run(cls) -> WorkerChildRun | None:
        """The opener for the active run's children; None outside a run."""
        import mlflow

        run = mlflow.active_run()
        if run is None:
            return None
        return cls(_absolute_uri(mlflow.get_tracking_uri()), run.info.experiment_id, run.info.run_id)

    @contextlib.contextmanager
    def __call__(self, cell: Cell, key: str, node: dict[str, Any] | None = None):
        import mlflow

        mlflow.set_tracking_uri(self.tracking_uri)
        with mlflow.start_run(run_name=cell.name, experiment_id=self.experiment_id, parent_run_id=self.parent_run_id,
                              tags=_child_run_tags(cell, key, node)) as run:
            mlflow.log_params({"method": cell.method, "seed": cell.seed, "task_fraction": cell.fraction})
            tracking.end_dead_runs_tagged("cell_key", key, "its grid worker died; the cell was run again")
            yield run.info.run_id


def _absolute_uri(uri: str) -> str:
    """A SQLite or file tracking URI relative to this directory made absolute (a Ray worker
    may start in another directory)."""
    for scheme in ("sqlite:///", "file:"):
        if uri.startswith(scheme):
            path = uri[len(scheme):]
            if path and not path.startswith("/"):
                return scheme + str(Path(path).resolve())
    if "://" not in uri and not uri.startswith("/"):
        return str(Path(uri).resolve())
    return uri


def grid_executor(settings: GridSettings):
    """None for ``experiments.executor: local``; else the Ray executor with the cells' resources."""
    experiments = settings.experiments
    if experiments.executor == "local":
        return None
    from hindsight.experiments.ray_grid import RayExecutor

    resources = experiments.cell_resources
    threads = os.environ.get("HINDSIGHT_TORCH_THREADS")
    return RayExecutor(address=experiments.ray_address, num_cpus=resources.num_cpus, num_gpus=resources.num_gpus,
                       memory_gb=resources.memory_gb, max_retries=resources.max_retries, dashboard=experiments.ray_dashboard,
                       torch_threads=int(threads) if threads else None)


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
        ``catalog_models`` with ``world_model`` an ``world_model.environment.WorldModelSimulator``.
    """
    if "world_model" not in catalog_models:
        return dict(catalog_models)
    tasks = RecordedTasks(settings.recorded_episodes(trajectories, skill_rollouts))
    simulator = WorldModelSimulator(world_model=catalog_models["world_model"], tasks=tasks, settings=settings.query_settings())
    return {**catalog_models, "world_model": simulator}


def grid_starts(stage1_policy, base_policy, catalog_starts: dict[str, Any]) -> GridStarts:
    """Every checkpoint a cell may start from (by ``GridArm.start_from``) and the world model."""
    catalog = dict(catalog_starts)
    world_model = catalog.pop("world_model", None)
    return GridStarts(policies={"stage1": stage1_policy, "base": base_policy, **catalog}, world_model=world_model)


def plays_world_model(rl: RLConfig) -> bool:
    """Whether a cell's method trains inside the world model (its key covers the model)."""
    return method_class(rl.algorithm).transition_source == "world_model"


class GridRun:
    """What every cell of one grid run shares: the base RL settings, the setup, the skill
    bank, the starting checkpoints, and the fingerprints of the weights a cell reads."""

    def __init__(self, starts: GridStarts, skills: pd.DataFrame, project: ProjectConfig, settings: GridSettings) -> None:
        preset = settings.experiments.grid
        self.starts, self.project = starts, project
        self.base_rl = with_overrides(settings.training.rl, preset.rl)
        self.setup = rl_setup(project, settings.training, preset.heldout)
        self.bank = skill_bank_from_table(skills)
        self.world_model = starts.world_model
        self.cache = Path(settings.experiments.cache_dir).resolve()  # the same folder for a Ray worker in another directory
        self.shared_inputs = "|".join([
            weights_fingerprint(starts.policy("stage1").model), weights_fingerprint(starts.policy("base").model), str(sorted(self.bank.items())),
        ])
        self.extra_inputs = {name: weights_fingerprint(policy.model) for name, policy in starts.policies.items() if name not in ("stage1", "base")}
        if self.world_model is not None:
            self.extra_inputs["world_model"] = weights_fingerprint(self.world_model.world_model.model)
        self.start_evaluations: dict[str, dict[str, float]] = {}
        self.start_outcomes: dict[str, pd.DataFrame] = {}

    def fingerprint(self, cell: Cell) -> str:
        """The weights a cell reads: the shared ones, plus its start's and the world model's."""
        start_from, rl = cell_rl_config(self.base_rl, cell)
        uses = [start_from] + (["world_model"] if plays_world_model(rl) else [])
        return "|".join([self.shared_inputs] + [self.extra_inputs[key] for key in uses if key in self.extra_inputs])

    def settings_of(self, cell: Cell) -> dict[str, Any]:
        """Every setting that decides a cell's result."""
        start_from, rl = cell_rl_config(self.base_rl, cell)
        shared = {k: v for k, v in as_dict(self.project).items() if k != "seed"}  # the cell's seed is its own
        settings = {"start_from": start_from, "rl": as_dict(rl), "heldout": as_dict(self.setup.heldout), "project": shared,
                    "pool": len(self.setup.pool)}
        if plays_world_model(rl) and self.world_model is not None:  # how the world model is queried
            settings["world_model"] = as_dict(self.world_model.settings)
        return settings

    def key(self, cell: Cell) -> str:
        """The cell's cache key."""
        return cell_key(cell, self.settings_of(cell), self.fingerprint(cell))

    def run_cell(self, cell: Cell) -> dict[str, Any]:
        """One RL run: its history, final held-out figures and environment steps."""
        start_from, config = cell_rl_config(self.base_rl, cell)
        if start_from not in self.start_evaluations:  # same tasks and seed: once per checkpoint
            evaluate = heldout_evaluator(self.setup.specs, self.setup.rollout, self.setup.heldout)
            self.start_evaluations[start_from] = evaluate(self.starts.policy(start_from), 0)
            self.start_outcomes[start_from] = evaluate.outcomes[0]
        # expert replay (EMPO) plays the training tasks' gold episodes; recorded_steps: the env steps that recorded them
        replays_experts = method_class(config.algorithm).transition_source == "expert_replay"
        cell_setup, recorded_steps = empo_grid_setup(self.setup, EmpoConfig(), cell.seed) if replays_experts else (self.setup, 0)
        result = run_rl(
            self.starts.policy(start_from), config, cell_setup,
            checkpoint_dir=self.cache / "checkpoints" / self.key(cell),
            seed=cell.seed,
            skill_bank=self.bank,
            log_metrics=lambda metrics, step: tracking.log_metrics(metrics, step=step),
            evaluate_start=True,
            start_metrics=self.start_evaluations[start_from],
            world_model=self.world_model if plays_world_model(config) else None,
        )
        final = end_row(result.history)
        outcomes = result.end_outcomes
        if outcomes is None and int(final["update"]) == 0:  # it ended with its start, evaluated here once per checkpoint
            outcomes = self.start_outcomes[start_from]
        return {
            "history": result.history.to_dict("records"),
            "final": {k: float(v) for k, v in final.items() if k.startswith("eval/") and pd.notna(v)},
            "env_steps": float(recorded_steps or result.history.iloc[-1].get("charts/env_steps_total", 0.0)),  # what the whole run played
            "end_update": int(final["update"]),
            "end_outcomes": None if outcomes is None else outcomes.to_dict("list"),  # the end policy's tasks, for pairing
            "cpu": cpu_model(),  # the machine that ran it (a Ray worker's own)
        }


def end_row(history: pd.DataFrame) -> pd.Series:
    """The history row of the policy the run ended with: the chosen point under
    ``training.rl.end_policy: best_seen`` (``SELECTED_COLUMN``), else the last update's."""
    if SELECTED_COLUMN in history and (history[SELECTED_COLUMN] == 1.0).any():
        return history[history[SELECTED_COLUMN] == 1.0].iloc[-1]
    return history.iloc[-1]


def run_experiment_grid(starts: GridStarts, skills: pd.DataFrame, project: ProjectConfig, settings: GridSettings):
    """Run every cell of the preset's grid that no committed summary stands for
    (``experiments.resume``), and read every finished cell back from its summary.

    A cell whose summary in ``experiments.summaries_dir/<preset>`` holds its settings hash is
    skipped, whichever machine wrote it; a changed setting reruns the cell (the log names it).
    The others go through this machine's cache of whole records, keyed by the settings and the
    weights the cell reads (the base and Stage-1 weights, the skill bank, the catalog model it
    uses), so a new version of one retrains only the cells that use it.

    The cells run here one after another, or as Ray tasks (``experiments.executor: ray``).

    Returns:
        (one row per cell: method, seed, fraction, status, node, run_id, seconds, final held-out
        success per split and task type; one row per cell and evaluation point: the
        learning-curve data; one row per cell and held-out task of its end policy: the pairs).
    """
    grid = GridRun(starts, skills, project, settings)
    executor = grid_executor(settings)
    child_runs = _child_run if executor is None else WorkerChildRun.of_active_run()
    records = run_resumable_grid(_grid_spec(settings).cells(), grid.run_cell, grid, cache_dir=grid.cache,
                                 summaries_dir=settings.experiments.summaries_folder, start_child_run=child_runs, executor=executor)
    cells_table, histories, outcomes = grid_tables(records)
    failed = int((cells_table["status"] == "failed").sum())
    tracking.log_metrics({"experiments/cells": float(len(cells_table)), "experiments/failed_cells": float(failed)})
    tracking.set_tags({"experiments.preset": settings.experiments.preset})
    return cells_table, histories, outcomes


def grid_tables(records: list[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(one row per cell, one row per cell and evaluation point, one row per cell and
    held-out task of its end policy: ``experiments.paired.OUTCOME_COLUMNS``) from the grid's records."""
    cells, histories, outcomes = [], [], []
    for record in records:
        ended = (record.get("result") or {}).get("end_outcomes")
        if ended:
            played = pd.DataFrame(ended).rename(columns={"seed": "task_seed"})
            outcomes.append(played.assign(cell=record["cell"], method=record["method"], seed=record["seed"], fraction=record["fraction"]))
        result = record.get("result") or {}
        fields = ("cell", "method", "seed", "fraction", "status", "node", "run_id", "seconds", "key", "error", "settings_hash", "inputs", "git_commit", "cpu")
        row = {k: record.get(k) for k in fields}
        row.update(result.get("final", {}))
        row["env_steps"] = result.get("env_steps")
        row["end_update"] = result.get("end_update")
        cells.append(row)
        for point in result.get("history", []):
            histories.append({"cell": record["cell"], "method": record["method"], "seed": record["seed"], "fraction": record["fraction"], **point})
    outcome_table = pd.concat(outcomes, ignore_index=True) if outcomes else pd.DataFrame(columns=OUTCOME_COLUMNS)
    return pd.DataFrame(cells), pd.DataFrame(histories), outcome_table[OUTCOME_COLUMNS]


def report_experiments(cells: pd.DataFrame, histories: pd.DataFrame, outcomes: pd.DataFrame, settings: GridSettings):
    """Results table (mean +- std over seeds), learning curves, data-efficiency plot, report.

    The report ends with the episodes each method needs to reach ``experiments.success_level``
    (``experiments.sample_efficiency``) and each method paired against GRPO over the same
    unseen tasks and seeds (``experiments.paired``), when the grid ran GRPO. The methods' mean
    held-out curves are logged to the grid's MLflow run against updates and against episodes
    (``experiments.curves_plot.curve_metrics``).

    Returns:
        (results table, markdown report, learning-curves figure, data-efficiency figure).
    """
    results = results_table(cells)
    report = markdown_report(cells, results, preset=settings.experiments.preset, data_versions=tracking.data_versions(), histories=histories)
    level = settings.experiments.success_level
    for section in (episodes_to_level_markdown(histories, level.rate, level.split, level.decoding), paired_against_markdown(outcomes, baseline="grpo")):
        report = report + ("\n" + section if section else "")
    for metrics, step in curve_metrics(histories):
        tracking.log_metrics(metrics, step=step)
    print("\n" + report, flush=True)
    return results, report, learning_curves_plot(histories), data_efficiency_plot(cells)

"""The premise check as a run of pieces that a killed run resumes from.

``run_premise_check`` is the whole premise check (``stage1.premise``): the policy plays the
held-out tasks at the plan's temperature, writes its own skill for each episode (the
analyzer's structured decoding), the rule teacher writes its skill, the controls are drawn
(``stage1.premise_controls``), every source re-scores the played actions
(``premise.premise_table``) and the copy test scores its pairs (``stage1.premise_copy``).

With ``PremisePlan.tasks_per_piece`` > 0 and a ``PieceStore`` the long parts run in pieces:

- ``play-<k>-...``: piece k's tasks played (rollout seed ``seed + k``), its episodes' own and
  rule skills written; one pickle of the trajectory table, the step samples, the skill
  records and the rollout's statistics;
- ``score-...-<k>``: piece k's episodes re-scored under every source and its copy pairs scored,
  after every play piece is done (the controls are drawn over all episodes: the unrelated
  skill of one piece's episode may come from another piece's);
- ``rank-...-<k>``: with ``PremisePlan.ranking``, piece k's ranked steps scored action by
  action (``stage1.premise_ranking``: every valid action with and without each source's
  skill), after the environment labelled the optimal actions of every episode.

Each piece is written whole (a temporary file renamed when complete) under a directory named
by a hash of what decides its content besides the tasks (``plan_key``: the policy's weights,
the rollout and analyzer settings, the seed, the piece size), itself named by its tasks
(``piece_names``), and a rerun loads the pieces already there instead of recomputing them: a
check on the first 5 tasks and one on 60 share the first play piece. The figures are computed
only once every piece is done, from the pieces alone, so an interrupted and resumed run
gives the figures of an uninterrupted one. ``tasks_per_piece`` 0 is one piece and nothing is
kept (Stage 1's check in the default run).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import pickle
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
import torch

from hindsight.policy import Policy
from hindsight.rollout.engine import run_rollouts
from hindsight.rollout.config import RolloutConfig
from hindsight.skills.analyzers import AnalyzerConfig, policy_teacher, rule_teacher
from hindsight.skills.episode_views import episodes_from_table
from hindsight.skills.records import parse_rate
from hindsight.stage1.premise import premise_metrics, premise_table, stream_seed
from hindsight.stage1.premise_controls import premise_sources, valid_actions_by_step
from hindsight.stage1.premise_copy import COPY_COLUMNS, copy_metrics, copy_pairs, copy_test_table
from hindsight.stage1.premise_paired import paired_metrics
from hindsight.stage1.premise_ranking import (
    RANKING_COLUMNS, episode_labels, mirrored_metrics, ranked_steps, ranking_metrics, ranking_sources, ranking_table,
)

logger = logging.getLogger(__name__)

PIECES_FORMAT = 1
"""Enters ``plan_key``: a change of what a piece file holds gets a directory of its own."""


@dataclass(frozen=True)
class PremisePlan:
    """What one premise check plays and scores."""

    tasks: Sequence[Any]
    """The held-out task references, in play order (one episode each)."""
    rollout: RolloutConfig
    """The rollout settings (group size 1; its ``seed`` is piece 0's, piece k plays at ``seed + k``)."""
    analyzer: AnalyzerConfig
    """How the policy (and the rule teacher) write the skills."""
    seed: int
    """The seed of the controls, the copy pairs and the bootstrap streams."""
    copy_pairs: int = 0
    """Most pairs of the copy test (0: none)."""
    tasks_per_piece: int = 0
    """Tasks per piece (0: all in one piece)."""
    ranking: bool = False
    """Whether to measure the ranking of SEED's shift on optimal actions
    (``stage1.premise_ranking``) where the environment labels them."""
    ranking_steps: int = 0
    """Most ranked steps scored (a seeded draw; 0: all)."""
    gate_beta: float = 5.0
    """SEED's gate sharpness, for the ranking's gate push (``methods.seed.SEEDSettings``)."""
    opd_coef: float = 0.01
    """SEED's distillation coefficient, for the ranking's gate push."""

    def __post_init__(self) -> None:
        if self.tasks_per_piece < 0 or self.copy_pairs < 0 or self.ranking_steps < 0:
            raise ValueError(
                f"tasks_per_piece, copy_pairs and ranking_steps must be >= 0, got {self.tasks_per_piece!r}, "
                f"{self.copy_pairs!r} and {self.ranking_steps!r}"
            )

    def pieces(self) -> list[list[Any]]:
        """The tasks of each piece, in order."""
        size = self.tasks_per_piece or max(len(self.tasks), 1)
        return [list(self.tasks[start : start + size]) for start in range(0, len(self.tasks), size)]


def policy_fingerprint(policy: Policy) -> str:
    """A hash of the policy's weights (every tensor of its state dict, names and bytes) and
    its vocabulary size: pieces written by another policy are never taken for this one's."""
    digest = hashlib.blake2b(digest_size=16)
    for name, tensor in policy.model.state_dict().items():
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    digest.update(str(len(policy.tokenizer)).encode())
    return digest.hexdigest()


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def plan_key(policy: Policy, plan: PremisePlan) -> str:
    """The name of a plan's piece directory: a hash of ``PIECES_FORMAT``, the policy's
    ``policy_fingerprint`` and what decides a play piece besides its tasks (the rollout
    settings but its progress bar, the analyzer, the seed, the piece size). The tasks name
    the pieces themselves (``piece_names``), so a check on the first n tasks and one on more
    share their first play pieces."""
    return _digest(json.dumps(
        {
            "format": PIECES_FORMAT,
            "policy": policy_fingerprint(policy),
            "rollout": repr(dataclasses.replace(plan.rollout, progress=False)),
            "analyzer": repr(plan.analyzer),
            "seed": plan.seed,
            "tasks_per_piece": plan.tasks_per_piece,
        },
        sort_keys=True,
    ))


def piece_names(plan: PremisePlan) -> tuple[list[str], list[str]]:
    """The names of the plan's play pieces (``play-<k>-<hash of its tasks>``: piece k of any
    plan with these tasks there) and score pieces (``score-<hash of every task and the copy
    pairs>-<k>``: the controls are drawn over all episodes, so a score piece belongs to one
    plan)."""
    pieces = plan.pieces()
    plays = [f"play-{k:03d}-{_digest(json.dumps([repr(task) for task in tasks]))}" for k, tasks in enumerate(pieces)]
    scoring = _digest(json.dumps({"tasks": [repr(task) for task in plan.tasks], "copy_pairs": plan.copy_pairs}))
    return plays, [f"score-{scoring}-{k:03d}" for k in range(len(pieces))]


def ranking_piece_names(plan: PremisePlan) -> list[str]:
    """The names of the plan's ranking pieces (``rank-<hash of every task and the ranking's
    step budget>-<k>``): kept apart from the score pieces, so a check that adds the ranking
    reuses the plays and scores an earlier one kept."""
    ranking = _digest(json.dumps({"tasks": [repr(task) for task in plan.tasks], "steps": plan.ranking_steps}))
    return [f"rank-{ranking}-{k:03d}" for k in range(len(plan.pieces()))]


class PieceStore:
    """A directory of finished pieces: ``load`` one by name (None when it is not there) and
    ``save`` one whole (written to a temporary file, renamed when complete, so a run killed
    while writing leaves no piece that a rerun would take for finished)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def path(self, name: str) -> Path:
        return self.directory / f"{name}.pkl"

    def load(self, name: str) -> Any | None:
        path = self.path(name)
        if not path.exists():
            return None
        with path.open("rb") as handle:
            return pickle.load(handle)

    def save(self, name: str, value: Any) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        staging = self.directory / f".{name}.partial-{os.getpid()}"
        with staging.open("wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(staging, self.path(name))

    def names(self) -> list[str]:
        """The finished pieces' names, sorted."""
        return sorted(path.stem for path in self.directory.glob("*.pkl")) if self.directory.exists() else []


def _piece(store: PieceStore | None, name: str, compute: Callable[[], Any], label: str) -> Any:
    """Piece ``name`` from ``store`` when it is there, else computed (and saved)."""
    kept = store.load(name) if store is not None else None
    if kept is not None:
        logger.info("Premise check: %s loaded from '%s' (done by an earlier run).", label, store.path(name))
        return kept
    started, cpu = time.perf_counter(), time.process_time()
    value = compute()
    if store is not None:
        store.save(name, value)
        logger.info(
            "Premise check: %s done in %.1f min (%.1f CPU-min: this process's threads), kept in '%s'.", label,
            (time.perf_counter() - started) / 60, (time.process_time() - cpu) / 60, store.path(name),
        )
    return value


def _play_piece(policy: Policy, env_factory, tasks: list, plan: PremisePlan, index: int) -> dict:
    """One play piece: the tasks played, the own and rule skills of their episodes."""
    rollout = run_rollouts(policy, env_factory, tasks, dataclasses.replace(plan.rollout, seed=plan.rollout.seed + index))
    episodes = episodes_from_table(rollout.table)
    return {
        "table": rollout.table, "samples": rollout.samples, "stats": dict(rollout.stats),
        "own_records": policy_teacher(policy, plan.analyzer).write_skills(episodes),
        "rule_records": rule_teacher(plan.analyzer).write_skills(episodes),
    }


def run_premise_check(
    policy: Policy, env_factory, plan: PremisePlan, prefix: str, store: PieceStore | None = None
) -> tuple[pd.DataFrame, dict[str, float], pd.DataFrame]:
    """The premise check of ``plan`` (the module docstring), in pieces kept in ``store``.

    Args:
        policy: The policy that plays, writes its own skills and re-scores (the teacher is the policy).
        env_factory: Builds an environment for a spec (``hindsight.envs.make_env``).
        plan: The tasks and settings.
        prefix: The metrics' prefix (e.g. ``stage1/premise``).
        store: Where finished pieces are kept and found (None: nothing kept).

    Returns:
        The per-episode table (``premise.PREMISE_COLUMNS``), the metrics (the premise's,
        ``premise_metrics``; the controls'; the copy test's; the ranking's where
        ``plan.ranking``; ``own_parse_rate``, ``own_equals_rule``, ``success_rate`` and
        ``episodes``, all under ``prefix``) and the ranking's per-action table
        (``premise_ranking.RANKING_COLUMNS``; no rows without the ranking or labels).
    """
    pieces = plan.pieces()
    if not pieces:
        raise ValueError("the premise check's plan has no task to play")
    play_names, score_names = piece_names(plan)
    played = [
        _piece(store, name, lambda k=k, tasks=tasks: _play_piece(policy, env_factory, tasks, plan, k),
               f"play piece {k + 1} of {len(pieces)} ({len(tasks)} tasks)")
        for k, (name, tasks) in enumerate(zip(play_names, pieces))
    ]
    table = pd.concat([piece["table"] for piece in played], ignore_index=True) if len(played) > 1 else played[0]["table"]
    episodes = episodes_from_table(table)
    own_records = [record for piece in played for record in piece["own_records"]]
    own = {record.episode_id: record.skill for record in own_records if record.parse_ok}
    rule = {record.episode_id: record.skill for piece in played for record in piece["rule_records"] if record.parse_ok}
    valid_actions = valid_actions_by_step(table)
    sources, control_metrics = premise_sources(episodes, own, rule, valid_actions, plan.seed)
    pairs = copy_pairs(episodes, valid_actions, plan.copy_pairs, plan.seed) if plan.copy_pairs else []

    def score(piece: dict) -> dict:
        ids = set(piece["table"]["episode_id"].astype(str))
        mine = [episode for episode in episodes if episode.episode_id in ids]
        copy = copy_test_table(policy, piece["samples"], [pair for pair in pairs if pair.episode_id in ids], valid_actions) if pairs else None
        return {"premise": premise_table(policy, mine, piece["samples"], sources), "copy": copy}

    scored = [_piece(store, name, lambda piece=piece: score(piece), f"score piece {k + 1} of {len(played)}")
              for k, (name, piece) in enumerate(zip(score_names, played))]
    premise = _source_major([part["premise"] for part in scored], list(sources))
    metrics = premise_metrics(premise, prefix, seed=plan.seed)
    metrics.update(paired_metrics(premise, prefix, seed=plan.seed))
    metrics.update({f"{prefix}/{key}": value for key, value in control_metrics.items()})
    if plan.copy_pairs:  # the copy test's figures whenever it is on, its counts 0 where no won step gave a pair
        parts = [part["copy"] for part in scored if part["copy"] is not None]
        copies = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(COPY_COLUMNS))
        metrics.update(copy_metrics(copies.reindex(columns=list(COPY_COLUMNS)), prefix, plan.seed))
    ranking = pd.DataFrame(columns=list(RANKING_COLUMNS))
    if plan.ranking:
        ranking, ranking_figures = _rank(policy, env_factory, plan, store, played, episodes, own, rule, sources, valid_actions, prefix)
        metrics.update(ranking_figures)
    metrics[f"{prefix}/own_parse_rate"] = parse_rate(own_records)
    metrics[f"{prefix}/own_equals_rule"] = sum(own.get(key) == value for key, value in rule.items()) / len(rule) if rule else 0.0
    metrics[f"{prefix}/success_rate"] = (
        float(played[0]["stats"]["success_rate"]) if len(played) == 1
        else sum(bool(episode.success) for episode in episodes) / len(episodes)
    )
    return premise, metrics, ranking


def _rank(policy, env_factory, plan, store, played, episodes, own, rule, sources, valid_actions, prefix):
    """The ranking of ``stage1.premise_ranking`` on the played pieces: labels from the
    environment, then one ranking piece per play piece; (its table, its metrics)."""
    labels, label_sources = episode_labels(episodes, plan.tasks, env_factory)
    steps = ranked_steps(labels, valid_actions, plan.ranking_steps, stream_seed(plan.seed, "ranking"))
    rank_sources = ranking_sources(own, rule, sources["unrelated"])
    metrics = {f"{prefix}/ranking/labelled_steps": float(len(labels)),
               f"{prefix}/ranking/labels_exact": float(label_sources == {"map"}) if label_sources else float("nan")}
    metrics.update({f"{prefix}/ranking/mirrored/{key}": value
                    for key, value in mirrored_metrics(episodes, own, rank_sources["mirrored"], valid_actions).items()})

    def rank(piece: dict) -> pd.DataFrame:
        ids = set(piece["table"]["episode_id"].astype(str))
        mine = [episode for episode in episodes if episode.episode_id in ids]
        return ranking_table(policy, piece["samples"], [key for key in steps if key[0] in ids], labels, valid_actions,
                             rank_sources, mine)

    parts = [_piece(store, name, lambda piece=piece: rank(piece), f"ranking piece {k + 1} of {len(played)}")
             for k, (name, piece) in enumerate(zip(ranking_piece_names(plan), played))]
    parts = [part for part in parts if len(part)]
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(RANKING_COLUMNS))
    metrics.update(ranking_metrics(table, prefix, plan.seed, gate_beta=plan.gate_beta, opd_coef=plan.opd_coef))
    return table, metrics


def _source_major(parts: list[pd.DataFrame], order: list[str]) -> pd.DataFrame:
    """The pieces' premise rows in the order one piece would give them: source by source (in
    ``order``), episodes in play order within each."""
    if len(parts) == 1:
        return parts[0]
    table = pd.concat(parts, ignore_index=True)
    rank = table["skill_source"].map({source: index for index, source in enumerate(order)})
    return table.iloc[rank.argsort(kind="stable").to_numpy()].reset_index(drop=True)

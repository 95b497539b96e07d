"""The premise check in pieces (``stage1.premise_pieces``): a run killed after some pieces
resumes from them without redoing them, and gives the figures of an uninterrupted run; one
piece is the flow without pieces (Stage 1's check in the default run).

Real parts: the session's tiny policy (a real HF model, freshly initialised) plays real
TextWorldExpress coin tasks (two rooms, so that some episodes are won and the copy test and
the same-form control have steps to score).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

import hindsight.stage1.premise_pieces as pieces_module
from hindsight.config import project_settings
from hindsight.envs import make_env
from hindsight.rollout.engine import run_rollouts
from hindsight.rollout.tasks import seen_tasks
from hindsight.skills.analyzers import policy_teacher, rule_teacher
from hindsight.skills.episode_views import episodes_from_table
from hindsight.stage1.premise import premise_metrics, premise_table
from hindsight.stage1.premise_controls import premise_sources, valid_actions_by_step
from hindsight.stage1.premise_copy import copy_metrics, copy_pairs, copy_test_table
from hindsight.stage1.premise_pieces import (
    PieceStore, PremisePlan, piece_names, plan_key, ranking_piece_names, run_premise_check,
)

PREFIX = "premise"
COIN = {
    "env": "textworldexpress", "max_steps": 5,
    "games": [{"game": "coin", "params": {"numLocations": 2, "numDistractorItems": 0, "includeDoors": 0, "limitInventorySize": 0}}],
}


class Killed(Exception):
    """Stands for the process being killed right after a piece was written."""


class KilledAfter(PieceStore):
    """A store whose run dies right after its ``limit``-th piece is written."""

    def __init__(self, directory, limit: int):
        super().__init__(directory)
        self.limit = limit
        self.saved: list[str] = []

    def save(self, name, value):
        super().save(name, value)
        self.saved.append(name)
        if len(self.saved) == self.limit:
            raise Killed(name)


class Recording(PieceStore):
    """A store that records which pieces a run computed (and so wrote)."""

    def __init__(self, directory):
        super().__init__(directory)
        self.saved: list[str] = []

    def save(self, name, value):
        super().save(name, value)
        self.saved.append(name)


def _plan(tasks_per_piece: int, tasks: int = 4, copy: int = 40, seed: int = 3, ranking: bool = False) -> PremisePlan:
    project = project_settings({"seed": 0, "environment": COIN, "rollout": {"max_parallel": 4, "progress": False}})
    (spec,) = project.specs()
    return PremisePlan(
        tasks=seen_tasks(spec, tasks, project.environment.seen_seed_offset),
        rollout=project.rollout_config(group_size=1, sampling={"temperature": 1.0}, seed=seed), analyzer=project.analyzer,
        seed=seed, copy_pairs=copy, tasks_per_piece=tasks_per_piece, ranking=ranking,
    )


def _assert_same_metrics(got: dict[str, float], expected: dict[str, float]) -> None:
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == value or (math.isnan(got[key]) and math.isnan(value)), key


@pytest.fixture(scope="module")
def uninterrupted(tiny_policy, tmp_path_factory):
    """The check in pieces of one task, with the ranking, run through without a stop."""
    store = Recording(tmp_path_factory.mktemp("uninterrupted"))
    plan = _plan(tasks_per_piece=1, ranking=True)
    table, metrics, ranking = run_premise_check(tiny_policy, make_env, plan, PREFIX, store)
    return plan, store, table, metrics, ranking


def test_the_uninterrupted_run_has_won_and_lost_episodes_and_copy_pairs(uninterrupted):
    plan, store, table, metrics, ranking = uninterrupted
    plays, scores = piece_names(plan)
    ranks = ranking_piece_names(plan)
    assert len(plays) == len(scores) == len(ranks) == 4 and store.saved == plays + scores + ranks
    assert set(table["success"]) == {True, False}  # both outcomes, so both have rows to compare
    assert metrics[f"{PREFIX}/copy/pairs"] > 0 and metrics[f"{PREFIX}/same_form/steps"] > 0
    assert {"own", "rule", "unrelated"} <= set(table["skill_source"])
    assert metrics[f"{PREFIX}/ranking/labels_exact"] == 1.0 and metrics[f"{PREFIX}/ranking/steps"] > 0  # coin: the map's labels
    assert len(ranking) and set(ranking["optimal"]) == {True, False}
    assert f"{PREFIX}/ranking/own/within/all/auroc" in metrics


def test_a_check_that_adds_the_ranking_reuses_the_plays_and_scores(uninterrupted, tiny_policy):
    """The ranking is not part of the piece directory's key nor of the play and score
    pieces' names: a check run first without it, then with it, finds its plays and scores
    and computes only the ranking pieces (the resume test below runs that path)."""
    plan = uninterrupted[0]
    without = _plan(tasks_per_piece=1)
    assert plan_key(tiny_policy, without) == plan_key(tiny_policy, plan)
    assert piece_names(without) == piece_names(plan) and not set(ranking_piece_names(plan)) & set(sum(piece_names(plan), []))


@pytest.mark.parametrize("killed_after", [1, 5, 10])  # during the plays; the scoring; the ranking
def test_a_killed_run_resumes_from_its_pieces_and_gives_the_uninterrupted_figures(
    uninterrupted, tiny_policy, tmp_path, monkeypatch, killed_after
):
    plan, _, expected_table, expected_metrics, expected_ranking = uninterrupted
    first = KilledAfter(tmp_path, killed_after)
    with pytest.raises(Killed):
        run_premise_check(tiny_policy, make_env, plan, PREFIX, first)
    assert first.names() == sorted(first.saved) and len(first.saved) == killed_after
    played_tasks = []

    def counting_rollouts(policy, env_factory, tasks, config):
        played_tasks.extend(tasks)
        return run_rollouts(policy, env_factory, tasks, config)

    monkeypatch.setattr(pieces_module, "run_rollouts", counting_rollouts)
    second = Recording(tmp_path)
    table, metrics, ranking = run_premise_check(tiny_policy, make_env, plan, PREFIX, second)
    plays, scores = piece_names(plan)
    assert second.saved == [name for name in plays + scores + ranking_piece_names(plan) if name not in first.saved]  # nothing redone
    assert len(played_tasks) == sum(name.startswith("play") for name in second.saved)
    pd.testing.assert_frame_equal(table, expected_table)
    pd.testing.assert_frame_equal(ranking, expected_ranking)
    _assert_same_metrics(metrics, expected_metrics)


def test_a_half_written_piece_is_not_taken_for_a_finished_one(uninterrupted, tmp_path):
    plan, store, *_ = uninterrupted
    (tmp_path / f".{piece_names(plan)[0][0]}.partial-1").write_bytes(b"cut")
    assert PieceStore(tmp_path).load(piece_names(plan)[0][0]) is None and PieceStore(tmp_path).names() == []


def test_one_piece_is_the_check_without_pieces(tiny_policy):
    """``tasks_per_piece`` 0 (the default run's Stage-1 check) computes what the premise node
    computed before pieces: one rollout, the skills, the sources, the table and the metrics."""
    plan = _plan(tasks_per_piece=0, tasks=3)
    table, metrics, _ = run_premise_check(tiny_policy, make_env, plan, PREFIX)
    rollout = run_rollouts(tiny_policy, make_env, plan.tasks, plan.rollout)
    episodes = episodes_from_table(rollout.table)
    own = {r.episode_id: r.skill for r in policy_teacher(tiny_policy, plan.analyzer).write_skills(episodes) if r.parse_ok}
    rule = {r.episode_id: r.skill for r in rule_teacher(plan.analyzer).write_skills(episodes) if r.parse_ok}
    valid = valid_actions_by_step(rollout.table)
    sources, control_metrics = premise_sources(episodes, own, rule, valid, plan.seed)
    expected = premise_table(tiny_policy, episodes, rollout.samples, sources)
    pd.testing.assert_frame_equal(table, expected)
    wanted = premise_metrics(expected, PREFIX, seed=plan.seed)
    wanted.update({f"{PREFIX}/{key}": value for key, value in control_metrics.items()})
    wanted.update(copy_metrics(
        copy_test_table(tiny_policy, rollout.samples, copy_pairs(episodes, valid, plan.copy_pairs, plan.seed), valid), PREFIX, plan.seed
    ))
    assert {key: metrics[key] for key in wanted} == pytest.approx(wanted, nan_ok=True)
    assert metrics[f"{PREFIX}/success_rate"] == rollout.stats["success_rate"]


def test_the_piece_directory_changes_with_the_policy_and_the_settings(tiny_policy, uninterrupted):
    import copy

    import torch

    plan = uninterrupted[0]
    key = plan_key(tiny_policy, plan)
    assert plan_key(tiny_policy, plan) == key
    assert plan_key(tiny_policy, _plan(tasks_per_piece=1, seed=4)) != key
    assert plan_key(tiny_policy, _plan(tasks_per_piece=2)) != key
    other = copy.deepcopy(tiny_policy)
    with torch.no_grad():
        next(other.model.parameters()).add_(1e-3)
    assert plan_key(other, plan) != key
    # more tasks: the same directory and the same first play pieces, other score pieces
    longer = _plan(tasks_per_piece=1, tasks=6)
    assert plan_key(tiny_policy, longer) == key
    assert piece_names(longer)[0][:4] == piece_names(plan)[0] and not set(piece_names(longer)[1]) & set(piece_names(plan)[1])

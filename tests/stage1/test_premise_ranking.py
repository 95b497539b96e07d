"""The premise check's ranking (``stage1.premise_ranking``): which steps it ranks, the mirrored
control, the figures on hand-made tables, and the scoring on a real policy against a
by-hand re-scoring of one action."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hindsight.skills.episode_views import EpisodeView, StepView
from hindsight.stage1.premise_ranking import (
    RANKING_COLUMNS, mirror_action, mirrored_metrics, mirrored_skills, ranked_steps, ranking_metrics, ranking_sources,
)
from hindsight.stage1.premise_report import ranking_summary

PREFIX = "premise"


def test_only_labelled_steps_with_an_optimal_and_a_suboptimal_valid_action_are_ranked():
    labels = {("a", 0): frozenset({"move north"}), ("a", 1): frozenset({"take coin"}), ("b", 0): frozenset({"move east"})}
    valid = {("a", 0): ["move north", "move south"], ("a", 1): ["take coin"], ("b", 0): ["Move  East", "look around"]}
    assert ranked_steps(labels, valid, 0, seed=0) == [("a", 0), ("b", 0)]  # ("a", 1): nothing to rank against
    assert len(ranked_steps(labels, valid, 1, seed=0)) == 1
    assert ranked_steps(labels, valid, 1, seed=5) == ranked_steps(labels, valid, 1, seed=5)
    with pytest.raises(ValueError, match="max_steps"):
        ranked_steps(labels, valid, -1, seed=0)


def test_the_mirrored_skill_reverses_every_direction_and_leaves_skills_without_one_out():
    assert mirror_action("open door to north") == "open door to south"
    assert mirror_action("move west") == "move east"
    own = {"a": "do: open door to north; move north; take coin", "b": "do: take coin", "c": "not a skill"}
    mirrored = mirrored_skills(own)
    assert mirrored == {"a": "do: open door to south; move south; take coin"}
    sources = ranking_sources(own, {"a": "do: take coin"}, {"a": "do: take coin", "b": "do: take coin"})
    assert sources["unrelated"] == {"a": "do: take coin"}  # b's unrelated text is its own: left out
    assert sources["mirrored"] == mirrored


def _step(step: int, action: str) -> StepView:
    return StepView(step=step, observation="", anchor_observation="", action=action, response=action, action_valid=True,
                    reward=0.0, score=None, won=False)


def test_the_mirrored_items_that_name_a_valid_action_are_counted():
    episode = EpisodeView("a", "g", "task", True, (_step(0, "open door to north"), _step(1, "move north")))
    valid = {("a", 0): ["open door to north", "open door to south"], ("a", 1): ["move north", "move east"]}
    own = {"a": "do: open door to north; move north; take coin"}
    figures = mirrored_metrics([episode], own, mirrored_skills(own), valid)
    assert figures["episodes"] == 1 and figures["applicable_share"] == 1.0
    assert figures["valid_share"] == 0.5  # "open door to south" is valid, "move south" is not


def _table(delta_of, sources=("own", "mirrored"), episodes=8, success=lambda e: e % 2 == 0) -> pd.DataFrame:
    """Every episode has two ranked steps of three valid actions, the first optimal; the
    played action is the first at step 0 and the second at step 1."""
    rows = []
    for source in sources:
        for episode in range(episodes):
            for step in range(2):
                for index in range(3):
                    delta = delta_of(source, episode, step, index)
                    rows.append({
                        "episode_id": f"e{episode}", "success": success(episode), "step": step, "action": f"a{index}",
                        "played": index == step, "optimal": index == 0, "coin_in_view": step == 1, "source": source,
                        "logp_plain": -1.0, "delta": delta, "token_gaps": [delta / 2, delta / 2],
                    })
    return pd.DataFrame(rows, columns=list(RANKING_COLUMNS))


def test_a_skill_that_points_at_the_optimal_action_ranks_it_first_and_its_mirror_last():
    table = _table(lambda source, e, s, i: (1.0 if i == 0 else -1.0 - 0.1 * e) * (1 if source == "own" else -1))
    metrics = ranking_metrics(table, PREFIX, seed=0, resamples=200)
    key = f"{PREFIX}/ranking"
    assert metrics[f"{key}/own/within/all/auroc"] == 1.0 and metrics[f"{key}/mirrored/within/all/auroc"] == 0.0
    assert metrics[f"{key}/own/pooled/all/auroc"] == 1.0  # played: the optimal at step 0, a suboptimal at step 1
    assert metrics[f"{key}/own/within/all/positives"] == 16 and metrics[f"{key}/own/within/all/negatives"] == 32
    assert metrics[f"{key}/own/within/all/episodes"] == 8
    assert metrics[f"{key}/own_minus_mirrored/within/all/difference"] == 1.0
    assert metrics[f"{key}/steps"] == 16 and metrics[f"{key}/played_optimal_share"] == 0.5
    # the gate push: opd_coef * (sigmoid(beta * 0.5) - sigmoid(beta * gap of the bad tokens)), by hand for one episode's tokens
    sigmoid = lambda x: 1 / (1 + math.exp(-x))
    bad = [sigmoid(5.0 * (-1.0 - 0.1 * e) / 2) for e in range(8)]
    assert metrics[f"{key}/own/pooled/all/gate_push"] == pytest.approx(0.01 * (sigmoid(2.5) - sum(bad) / len(bad)))
    # the steps where the played action was suboptimal: step 1 of every episode; the coin is in view at step 1 only
    assert metrics[f"{key}/own/within/played_suboptimal/positives"] == 8
    assert metrics[f"{key}/own/within/coin_out_of_view/positives"] == 8
    assert f"{key}/own/pooled/played_suboptimal/auroc" not in metrics  # every played action there is suboptimal
    assert metrics[f"{key}/own/within/won/episodes"] == 4 and metrics[f"{key}/own/within/lost/episodes"] == 4
    # the references: the plain log-prob is -1 everywhere (ties: 1/2); the teacher's is plain + the own shift
    assert metrics[f"{key}/plain/within/all/auroc"] == 0.5 and metrics[f"{key}/teacher/within/all/auroc"] == 1.0
    assert f"{key}/plain/pooled/all/gate_push" not in metrics


def test_a_skill_that_moves_nothing_ranks_at_one_half_and_the_summary_names_its_interval():
    table = _table(lambda source, e, s, i: 0.0, sources=("own",))
    metrics = ranking_metrics(table, PREFIX, seed=0, resamples=200)
    assert metrics[f"{PREFIX}/ranking/own/within/all/auroc"] == 0.5
    assert metrics[f"{PREFIX}/ranking/own/pooled/all/gate_push"] == 0.0
    summary = ranking_summary(metrics, PREFIX, "exact (the map)")
    row = summary[(summary["population"] == "within") & (summary["subset"] == "all")].iloc[0]
    assert row["auroc"] == 0.5 and "expanded-BCa bootstrap over episodes" in row["note"] and "exact" in row["note"]


def test_an_empty_table_gives_no_figures():
    assert ranking_metrics(pd.DataFrame(columns=list(RANKING_COLUMNS)), PREFIX) == {}
    assert ranking_summary({}, PREFIX).empty

"""The copy test (``stage1.premise_copy``) and the per-step scoring of the same-form control,
on a real episode (TextWorldExpress twc gold path) and the session's tiny policy (a real
HF model, freshly initialised).

The copy test's log-probabilities are those of the valid-action decoder: under one skill,
the probabilities of a step's valid actions sum to 1. The pairs below put every action of a
step under the same skill ("do: Y0") to check exactly that.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hindsight.policy.table_samples import samples_from_table
from hindsight.policy.prompts import PromptConfig
from hindsight.skills import episodes_from_table
from hindsight.skills.compact import concrete_action
from hindsight.stage1.premise import StepSkills, premise_table
from hindsight.stage1.premise_controls import same_form_skills, valid_actions_by_step
from hindsight.stage1.premise_copy import COPY_COLUMNS, CopyPair, copy_metrics, copy_pairs, copy_test_table
from hindsight.stage1.premise_report import premise_summary
from hindsight.training.distillation import response_logprobs, skill_augmented_logprobs


@pytest.fixture(scope="module")
def played(recorded_tables, tiny_policy):
    table = recorded_tables["twc_gold"]
    (episode,) = episodes_from_table(table)
    samples = samples_from_table(table, tiny_policy.tokenizer, PromptConfig(), constrained=True)
    assert all(sample.allowed_ids is not None for sample in samples)
    return episode, samples, valid_actions_by_step(table)


def test_the_pairs_are_valid_actions_of_won_steps_and_bounded(played, recorded_tables):
    episode, _, valid = played
    (failure,) = episodes_from_table(recorded_tables["twc_failure"])
    every = copy_pairs([episode, failure], valid, max_pairs=10_000, seed=0)
    assert {pair.episode_id for pair in every} == {episode.episode_id}  # lost episodes give none
    assert len(every) == sum(len(set(valid[(episode.episode_id, s.step)])) for s in episode.steps)
    for pair in every:
        actions = valid[(pair.episode_id, pair.step)]
        assert pair.action in actions and pair.other in actions
        assert concrete_action(pair.other) != concrete_action(pair.action)
    bounded = copy_pairs([episode], valid, max_pairs=7, seed=0)
    assert len(bounded) == 7 and set(bounded) <= set(every)
    assert bounded == copy_pairs([episode], valid, max_pairs=7, seed=0)
    assert copy_pairs([episode], valid, max_pairs=0, seed=0) == []


def test_under_one_skill_the_actions_of_a_step_share_probability_one(played, tiny_policy):
    episode, samples, valid = played
    step = episode.steps[1]
    actions = list(dict.fromkeys(valid[(episode.episode_id, step.step)]))
    anchor = actions[0]
    # every other action scored under "do: <anchor>" (its "other" skill), the anchor under its own (named) skill
    pairs = [CopyPair(episode.episode_id, step.step, action, anchor) for action in actions[1:]]
    pairs.append(CopyPair(episode.episode_id, step.step, anchor, actions[1]))
    table = copy_test_table(tiny_policy, samples, pairs, valid)
    assert tuple(table.columns) == COPY_COLUMNS and len(table) == len(actions)
    assert (table["logp_named"] <= 0).all() and (table["logp_other"] <= 0).all()
    assert table["gap"].tolist() == pytest.approx((table["logp_named"] - table["logp_other"]).tolist())
    under_anchor = [math.exp(v) for v in table["logp_other"].iloc[:-1]] + [math.exp(table["logp_named"].iloc[-1])]
    assert sum(under_anchor) == pytest.approx(1.0, abs=1e-4)


def test_the_copy_metrics_interval_resamples_episodes():
    table = pd.DataFrame(
        [{"episode_id": f"e{i % 5}", "step": i, "action": "a", "other": "b", "logp_named": -1.0, "logp_other": -1.0 - g,
          "gap": g} for i, g in enumerate([0.2, -0.1, 0.4, 0.3, 0.0, 0.5, -0.2, 0.1, 0.2, 0.3])]
    )
    metrics = copy_metrics(table, "p", seed=0)
    assert metrics["p/copy/gap_mean"] == pytest.approx(0.17)
    assert metrics["p/copy/positive_share"] == pytest.approx(0.7)
    assert (metrics["p/copy/pairs"], metrics["p/copy/steps"], metrics["p/copy/episodes"]) == (10, 10, 5)
    assert metrics["p/copy/gap_low"] < 0.17 < metrics["p/copy/gap_high"]
    (row,) = premise_summary(metrics, "p").itertuples()
    assert (row.skill_source, row.tokens_on, row.tokens) == ("copy", "pairs", 10) and row.positive_share == pytest.approx(0.7)
    assert metrics["p/copy_same_verb/pairs"] == 0  # "a" against "b": one word each, no verb to share
    moves = table.assign(action=["move north"] * 5 + ["move east"] * 5, other=["move south"] * 5 + ["open door to east"] * 5)
    figures = copy_metrics(moves, "p", seed=0)
    assert figures["p/copy_same_verb/pairs"] == 5 and figures["p/copy_same_verb/gap_mean"] == pytest.approx(0.16)
    assert figures["p/copy/gap_mean"] == pytest.approx(0.17)  # every pair, as before
    assert list(premise_summary(figures, "p")["skill_source"]) == ["copy", "copy_same_verb"]
    empty = copy_metrics(table.iloc[:0], "p")
    assert empty == {"p/copy/pairs": 0.0, "p/copy/steps": 0.0, "p/copy/episodes": 0.0}
    assert premise_summary(empty, "p")["note"].iloc[0].startswith("not measured")


def test_a_per_step_source_scores_each_listed_step_with_its_own_skill(played, tiny_policy):
    episode, samples, valid = played
    own = {episode.episode_id: f"do: {episode.steps[0].action}; {episode.steps[2].action}"}
    control = same_form_skills([episode], own, valid, seed=0)
    assert isinstance(control, StepSkills) and control.by_step
    table = premise_table(tiny_policy, [episode], samples, {"own": own, "same_form": control})
    (row,) = table[table["skill_source"] == "same_form"].itertuples()
    assert row.skill == own[episode.episode_id] and row.steps == len(control.by_step)
    assert row.listed_tokens == row.tokens  # scored only where the own skill names the action
    # the row's gap is the one of each step under its own skill, scored alone
    plain = response_logprobs(tiny_policy.model, samples, 4, tiny_policy.tokenizer.pad_token_id)
    gaps = []
    for (_, step), skill in control.by_step.items():
        sample = samples[step]
        (skilled,) = skill_augmented_logprobs(tiny_policy.model, tiny_policy.tokenizer, [sample], {episode.episode_id: skill}, 4)
        gaps += [float(s - p) for s, p, c in zip(skilled, plain[step], sample.choice_positions) if c]
    assert row.gap_mean == pytest.approx(sum(gaps) / len(gaps), abs=1e-5)

"""WM-R1's own scoring path (``WMR1.episode_scores`` / ``advantages`` on a rollout table)
against the official known answer: ``p = c / N``, ``R_wm`` over imaginary world-model calls
only, with the ``n_wm_max`` budget."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from hindsight import algorithms
from hindsight.methods import build_method
from hindsight.rollout.imagination import CALLS_COLUMN
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig
from hindsight.world_model.environment import IMAGINE_PREFIX

KNOWN = [1.5232, 1.4530, -0.15, -0.21]
"""The official formula on one group: lengths [3, 5, 20, 8], successes [T, T, F, F],
world-model calls [1, 3, 0, 5], step limit 20, n_wm_max 5, weights 1 / 0.5 / 0.1."""


def known_table() -> pd.DataFrame:
    """The known-answer group as rollout rows: committed steps [3, 5, 20, 8]; imaginary calls
    [1, 3, 0, 5], made as in-response calls and, in episode d, also as imagined turns (two
    accepted, one refused: no call); every committed step is a world-model transition, which
    is no call for R_wm."""
    rows = []

    def add(episode, action, calls=0, valid=True, won=False):
        rows.append({"episode_id": episode, "group_id": "g", "step": len([r for r in rows if r["episode_id"] == episode]),
                     "won": won, "reward": 0.0, "action_valid": valid, "source": "world_model", "action": action, CALLS_COLUMN: calls})

    for episode, length, calls, won in (("a", 3, [1, 0, 0], True), ("b", 5, [2, 0, 1, 0, 0], True), ("c", 20, [0] * 20, False)):
        for step in range(length):
            add(episode, "open box", calls[step], won=won and step == length - 1)
    add("d", IMAGINE_PREFIX + "open box")
    add("d", IMAGINE_PREFIX + "take key", valid=False)  # refused: no world-model call
    for step in range(8):
        add("d", "open box", 3 if step == 2 else 0)
        if step == 4:
            add("d", IMAGINE_PREFIX + "take key")
    return pd.DataFrame(rows)


def scores_by_episode(method, table: pd.DataFrame, rl: RLConfig, update: int = 0) -> list[float]:
    batch = RolloutBatch(table=table, samples=[], played=table, update=update)
    per_row = pd.Series(method.episode_scores(batch, rl, 20).tolist(), index=table["episode_id"])
    return [per_row[episode].iloc[0] for episode in "abcd"]


def test_the_methods_scores_give_the_official_known_answer():
    rl = RLConfig(algorithm="wmr1")
    method = build_method(rl)
    assert (method.settings.length_budget, method.settings.n_wm_max) == ("group_success_rate", 5)
    table = known_table()
    assert scores_by_episode(method, table, rl) == pytest.approx(KNOWN, abs=5e-5)
    # the math function on the counts agrees, so the table's counting is the official n_wm
    direct = algorithms.wm_r1_rewards([3, 5, 20, 8], [True, True, False, False], [1, 3, 0, 5], ["g"] * 4, max_length=20, max_calls=5)
    assert direct.tolist() == pytest.approx(KNOWN, abs=5e-5)
    # the advantages are GRPO over the group of those four scores, statistics over trajectories
    batch = RolloutBatch(table=table, samples=[], played=table)
    advantages = pd.Series(method.advantages(batch, rl, 20).tolist(), index=table["episode_id"]).groupby(level=0).first()
    expected = algorithms.group_normalized_advantages(torch.tensor(KNOWN), ["g"] * 4)
    assert [advantages[e] for e in "abcd"] == pytest.approx(expected.tolist(), abs=1e-3)


def test_the_progress_schedule_and_the_call_limit_are_settings():
    table = known_table()
    rl = RLConfig(algorithm="wmr1", updates=4, methods={"wmr1": {"length_budget": "training_progress"}})
    # update 0: p = 0, budgets are the limits (20 steps, 5 calls): a, the 3-step win with 1 call,
    # R_len = 0.5 - 0.5 * (3 - 20) / 20 = 0.925, R_wm = 0.5 - 0.5 * (1 - 5) / 5 = 0.9
    progress = scores_by_episode(build_method(rl), table, rl, update=0)
    assert progress[0] == pytest.approx(1 + 0.5 * 0.925 + 0.1 * 0.9, abs=1e-5)
    assert progress != pytest.approx(KNOWN, abs=5e-5)
    # n_wm_max 10: call budget 0.5 * 2 + 0.5 * 10 = 6 -> a's R_wm = 0.5 - 0.5 * (1 - 6) / 6
    wider = RLConfig(algorithm="wmr1", methods={"wmr1": {"n_wm_max": 10}})
    assert scores_by_episode(build_method(wider), table, wider)[0] == pytest.approx(1 + 0.5 * 0.875 + 0.1 * (0.5 + 2.5 / 6), abs=1e-5)
    with pytest.raises(ValueError, match=r"n_wm_max must be >= 1"):
        build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"n_wm_max": 0}}))


def test_a_group_whose_successes_made_no_call_has_a_call_budget_of_one():
    # two wins without a world-model call: p = 1, N_WM_ref = 0, so the call budget
    # 1 * 0 + 0 * 5 = 0 becomes 1 and each win's R_wm = 0.5 - 0.5 * (0 - 1) / 1 = 1.0
    table = known_table()
    table = table[table["episode_id"].isin(["a", "b"])].assign(**{CALLS_COLUMN: 0})
    rl = RLConfig(algorithm="wmr1")
    batch = RolloutBatch(table=table, samples=[], played=table)
    scores = pd.Series(build_method(rl).episode_scores(batch, rl, 20).tolist(), index=table["episode_id"]).groupby(level=0).first()
    length_budget = 4.0  # p = 1: the mean length of the wins
    for episode, length in (("a", 3), ("b", 5)):
        r_len = max(0.5 - 0.5 * (length - length_budget) / length_budget, 0.1)
        assert scores[episode] == pytest.approx(1 + 0.5 * r_len + 0.1 * 1.0, abs=1e-5)


def official_no_think_reward(success: bool, length: int, max_steps: int, p: float, length_ref: float) -> float:
    """The official reward with gamma = 0 (``compute_wm_r1_reward`` of WM-R1's reward module,
    written out here from its formula): ``1.0 R_succ + 0.5 R_L``, ``R_L`` over the budget
    ``p L_ref + (1 - p) max_steps``; R_wm is skipped when gamma is 0."""
    budget = p * length_ref + (1 - p) * max_steps or 1.0
    lam = (length - budget) / budget
    r_l = max(-0.5 * lam + 0.5, 0.1) if success else min(0.9 * lam - 0.1, -0.1)
    return 1.0 * float(success) + 0.5 * r_l


def test_thinking_none_with_gamma_0_gives_the_official_no_think_ablation():
    """The official no-think ablation (``env.n_wm_max=0``, ``reward.gamma`` left at the config's
    0, ``env.max_steps=15``) on a hand-made group: committed steps [3, 5, 15, 8], two wins."""
    rows = []
    for episode, length, won in (("a", 3, True), ("b", 5, True), ("c", 15, False), ("d", 8, False)):
        for step in range(length):
            rows.append({"episode_id": episode, "group_id": "g", "step": step, "won": won and step == length - 1, "reward": 0.0,
                         "action_valid": True, "source": "world_model", "action": "open box"})
    table = pd.DataFrame(rows)
    rl = RLConfig(algorithm="wmr1", methods={"wmr1": {"thinking": "none", "world_model_weight": 0.0}})
    method = build_method(rl)
    batch = RolloutBatch(table=table, samples=[], played=table)
    per_row = pd.Series(method.episode_scores(batch, rl, 15).tolist(), index=table["episode_id"])
    ours = [per_row[e].iloc[0] for e in "abcd"]
    # p = 2/4, L_ref = (3 + 5) / 2: budget 0.5 * 4 + 0.5 * 15 = 9.5
    official = [official_no_think_reward(s, n, 15, 0.5, 4.0) for s, n in ((True, 3), (True, 5), (False, 15), (False, 8))]
    assert official == pytest.approx([1.42105, 1.36842, -0.05, -0.12105], abs=5e-5)  # by hand
    assert ours == pytest.approx(official, abs=1e-6)
    # the default gamma 0.1 (the official main run) adds R_wm: 0 calls against a budget of
    # 0.5 * 0 + 0.5 * 5 gives +1 to a success and -1 to a failure, i.e. +-0.1
    default = RLConfig(algorithm="wmr1", methods={"wmr1": {"thinking": "none"}})
    assert build_method(default).settings.world_model_weight == 0.1
    shifted = pd.Series(build_method(default).episode_scores(batch, default, 15).tolist(), index=table["episode_id"])
    assert [shifted[e].iloc[0] for e in "abcd"] == pytest.approx([o + d for o, d in zip(official, (0.1, 0.1, -0.1, -0.1))], abs=1e-6)
    with pytest.raises(ValueError, match="world_model_weight must be >= 0"):
        build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"world_model_weight": -0.1}}))

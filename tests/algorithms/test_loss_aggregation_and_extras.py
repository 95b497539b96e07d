"""Known-answer tests of loss aggregation and the small helpers (STEPO, EMPO, WM-R1)."""

import pytest
import torch

from hindsight.algorithms import (
    aggregation_count,
    aggregate_loss,
    empo_action_score,
    empo_step_rewards,
    stepo_trajectory_weights,
    wm_r1_length_rewards,
    zero_variance_groups,
)

pytestmark = pytest.mark.unit

LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])


def test_aggregate_token_mean():
    assert aggregate_loss(LOSS, MASK, "token-mean").item() == pytest.approx(7 / 3)


def test_aggregate_seq_mean_token_mean_skips_empty_sequences():
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-mean").item() == pytest.approx((1.5 + 4.0) / 2)


def test_aggregate_seq_mean_token_sum():
    assert aggregate_loss(LOSS, MASK.bool(), "seq-mean-token-sum").item() == pytest.approx((3.0 + 4.0) / 2)


def test_aggregate_no_tokens_and_padding_values():
    assert aggregate_loss(LOSS, torch.zeros_like(MASK), "token-mean").item() == 0.0
    padded = LOSS.clone()
    padded[2, 2] = float("inf")
    assert aggregate_loss(padded, MASK, "token-mean").item() == pytest.approx(7 / 3)


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
def test_row_chunks_weighted_by_their_count_share_aggregate_as_the_whole(mode):
    torch.manual_seed(0)
    loss = torch.randn(5, 4)
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 1, 0], [1, 0, 0, 0]])
    whole = aggregate_loss(loss, mask, mode)
    total = aggregation_count(mask, mode)
    assert total == (9 if mode == "token-mean" else 4)
    chunks = [slice(0, 2), slice(2, 3), slice(3, 5)]
    pieces = sum(aggregate_loss(loss[c], mask[c], mode) * aggregation_count(mask[c], mode) / total for c in chunks)
    torch.testing.assert_close(pieces, whole)
    with pytest.raises(ValueError, match="unknown aggregation mode"):
        aggregation_count(mask, "token-sum")


def test_aggregate_unknown_mode():
    with pytest.raises(ValueError, match="seq-mean-token-sum"):
        aggregate_loss(LOSS, MASK, "mean")


def test_stepo_weights_sum_to_one_per_trajectory():
    weights = stepo_trajectory_weights(["a", "a", "b", "a", "c", "c"])
    assert torch.allclose(weights, torch.tensor([1 / 3, 1 / 3, 1.0, 1 / 3, 0.5, 0.5]))


def test_zero_variance_groups():
    groups = zero_variance_groups([1, 1, 0, 1, 5, 0, 0], ["g1", "g1", "g2", "g2", "solo", "g3", "g3"])
    assert groups == ["g1", "solo", "g3"]


def test_empo_scores_and_rewards():
    assert empo_action_score("take  Apple", "take apple") == 1.0
    assert empo_action_score("take pear", "take apple") == 0.5
    assert empo_action_score("open fridge", "take apple") == 0.1
    assert empo_action_score(None, "take apple") == 0.0
    assert empo_action_score("  ", "take apple") == 0.0
    rewards = empo_step_rewards([True, True, False], [1.0, 0.5, 0.0])
    assert torch.allclose(rewards, torch.tensor([1.0, 0.55, 0.0]))


def test_wm_r1_adaptive_length_budget():
    # group g: successes of length 10 and 20, a failure of length 30; max 40.
    # p = 2/3, L_ref = 15, budget = 2/3*15 + 1/3*40 = 70/3.
    # len 10: lam = (10 - 70/3)/(70/3) = -4/7 -> 0.5 + 2/7 = 0.7857
    # len 20: lam = -1/7 -> 0.5 + 1/14 = 0.5714
    # failure len 30: lam = 2/7 -> min(0.9*2/7 - 0.1, -0.1) = -0.1
    # group h: one failure of length 40: p = 0, budget 40, lam 0 -> min(-0.1, -0.1) = -0.1;
    # group k: one success of length 50: p = 1, budget = L_ref = 50, lam 0 -> 0.5
    rewards = wm_r1_length_rewards(
        [10, 20, 30, 40, 50], [True, True, False, False, True], ["g", "g", "g", "h", "k"], max_length=40
    )
    expected = torch.tensor([0.5 + 2 / 7, 0.5 + 1 / 14, -0.1, -0.1, 0.5])
    assert torch.allclose(rewards, expected, atol=1e-6)
    # p = 1/3, L_ref = 4, budget = 4/3 + 2/3 * 40 = 28: success 4 -> lam -6/7 -> 0.5 + 3/7;
    # a short failure (10: lam -9/14) is punished harder: 0.9 * -9/14 - 0.1; failure 40 -> -0.1
    rewards = wm_r1_length_rewards([4, 10, 40], [True, False, False], ["g", "g", "g"], max_length=40)
    assert torch.allclose(rewards, torch.tensor([0.5 + 3 / 7, -0.9 * 9 / 14 - 0.1, -0.1]), atol=1e-6)
    # a success far over its group's budget is floored at 0.1: p = 1, budget 22, lam 18/22
    rewards = wm_r1_length_rewards([40, 4], [True, True], ["g", "g"], max_length=40)
    assert torch.allclose(rewards, torch.tensor([0.1, 0.5 + 0.5 * 18 / 22]), atol=1e-6)

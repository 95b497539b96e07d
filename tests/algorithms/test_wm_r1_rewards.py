"""Known answers of the full WM-R1 reward ``1.0 R_succ + 0.5 R_len + 0.1 R_wm``, worked by hand."""

from __future__ import annotations

import pytest
import torch

from hindsight.algorithms import wm_r1_rewards

pytestmark = pytest.mark.unit


def test_full_reward_known_answers():
    # group g: p = 1/2, L_ref = 4. Steps: budget 0.5*4 + 0.5*20 = 12. Calls: budget 0.5*4 + 0.5*40 = 22.
    #   success, 4 steps, 4 calls: R_len = 0.5 - 0.5*(-8/12) = 5/6;  R_wm = 0.5 - 0.5*(-18/22) = 10/11
    #   failure, 10 steps, 10 calls: R_len = 0.9*(-2/12) - 0.1 = -0.25; R_wm = 0.9*(-12/22) - 0.1 = -0.5909...
    # group h: one failure, 20 steps, 0 calls: p = 0, budgets 20 and 40.
    #   R_len = min(0.9*0 - 0.1, -0.1) = -0.1;  R_wm = 0.9*(-1) - 0.1 = -1.0
    rewards = wm_r1_rewards(
        [4, 10, 20], [True, False, False], [4, 10, 0], ["g", "g", "h"], max_length=20, max_calls=40
    )
    expected = torch.tensor([
        1.0 + 0.5 * 5 / 6 + 0.1 * 10 / 11,
        0.5 * -0.25 + 0.1 * (0.9 * -12 / 22 - 0.1),
        0.5 * -0.1 + 0.1 * -1.0,
    ])
    torch.testing.assert_close(rewards, expected)
    assert rewards[0] == pytest.approx(1.507576, abs=1e-5)
    assert rewards[1] == pytest.approx(-0.184091, abs=1e-5)


def test_weights_are_applied_and_success_floor_holds():
    # a success far over its budget keeps R_len = R_wm = 0.1 (the floor), so 1 + 0.05 + 0.01
    rewards = wm_r1_rewards([4, 40], [True, True], [4, 400], ["g", "g"], max_length=40, max_calls=40)
    assert float(rewards[1]) == pytest.approx(1.0 + 0.5 * 0.1 + 0.1 * 0.1)
    only_success = wm_r1_rewards(
        [4, 40], [True, False], [4, 40], ["g", "g"], max_length=40, max_calls=40, length_weight=0.0, world_model_weight=0.0
    )
    assert only_success.tolist() == [1.0, 0.0]


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError):
        wm_r1_rewards([4, 10], [True], [4, 10], ["g", "g"], max_length=20, max_calls=20)


def test_the_published_budget_tightens_with_training_progress():
    # one group, a 4-step success and a 10-step failure, L_max = 20, L_ref = 4:
    # p = 0 (first update): budget 20 -> R_len(success) = 0.5 - 0.5 * (4 - 20) / 20 = 0.9
    # p = 0.75: budget 0.75 * 4 + 0.25 * 20 = 8 -> 0.5 - 0.5 * (4 - 8) / 8 = 0.75; failure 0.9 * 2 / 8 - 0.1 = 0.125 -> capped at -0.1
    # with the group's success rate (p = 0.5): budget 12 -> 5/6, as in the known answer above
    from hindsight.algorithms import wm_r1_length_rewards

    args = ([4, 10], [True, False], ["g", "g"])
    assert wm_r1_length_rewards(*args, max_length=20, progress=0.0).tolist() == pytest.approx([0.9, 0.9 * -0.5 - 0.1])
    assert wm_r1_length_rewards(*args, max_length=20, progress=0.75).tolist() == pytest.approx([0.75, -0.1])
    assert wm_r1_length_rewards(*args, max_length=20).tolist()[0] == pytest.approx(5 / 6)
    with pytest.raises(ValueError, match="progress must be in"):
        wm_r1_length_rewards(*args, max_length=20, progress=1.5)


def test_a_replayed_success_earns_no_utilisation_bonus():
    # two identical wins, one simulated (4 calls) and one replayed (0 calls): before, the replay
    # scored the higher R_wm (fewer calls); now its R_wm is 0 and the simulated win scores higher
    both = dict(max_length=20, max_calls=20, progress=0.5)
    rewards = wm_r1_rewards([4, 4], [True, True], [4, 0], ["g", "g"], imagined=[True, False], **both)
    length = 0.5 - 0.5 * (4 - 12) / 12  # budget 0.5 * 4 + 0.5 * 20
    calls = 0.5 - 0.5 * (4 - 11) / 11  # budget 0.5 * mean(4, 0) + 0.5 * 20
    assert rewards.tolist() == pytest.approx([1.0 + 0.5 * length + 0.1 * calls, 1.0 + 0.5 * length])
    assert rewards[0] > rewards[1]
    unmasked = wm_r1_rewards([4, 4], [True, True], [4, 0], ["g", "g"], **both)
    assert unmasked[1] > unmasked[0]  # the old scoring: the replay got the top bonus


def test_the_official_known_answer_and_the_zero_budget_guard():
    from hindsight.algorithms import wm_r1_length_rewards

    rewards = wm_r1_rewards([3, 5, 20, 8], [True, True, False, False], [1, 3, 0, 5], ["g"] * 4, max_length=20, max_calls=5)
    assert rewards.tolist() == pytest.approx([1.5232, 1.4530, -0.15, -0.21], abs=5e-5)
    # all wins with 0 calls: budget 1 * 0 + 0 * 5 = 0 -> 1 (without the guard: 0 / 0)
    calls = wm_r1_length_rewards([0, 0], [True, True], ["g", "g"], max_length=5)
    assert calls.tolist() == [1.0, 1.0]
    # the same with the progress schedule at its end (p = 1): a failure with 0 calls, lam = -1
    assert wm_r1_length_rewards([0, 0], [True, False], ["g", "g"], max_length=5, progress=1.0).tolist() == pytest.approx([1.0, -1.0])


def test_a_group_without_a_success_falls_back_to_its_longest():
    from hindsight.algorithms import wm_r1_length_rewards

    # p = c / N = 0: the reference is multiplied by 0, the budget is the limit (10);
    # lam = -0.6 and -0.2 -> 0.9 lam - 0.1
    assert wm_r1_length_rewards([4, 8], [False, False], ["g", "g"], max_length=10).tolist() == pytest.approx([-0.64, -0.28])
    # progress 0.5: reference = the group's longest (8), budget 0.5 * 8 + 0.5 * 10 = 9;
    # 4 steps: lam = -5/9 -> min(0.9 * -5/9 - 0.1, -0.1) = -0.6
    assert wm_r1_length_rewards([4, 8], [False, False], ["g", "g"], max_length=10, progress=0.5).tolist()[0] == pytest.approx(-0.6)

"""Known-answer tests of the group-relative advantages (GRPO, GiGPO, OPID, EMPO)."""

import math

import pytest
import torch

from hindsight.algorithms import (
    empo_advantages,
    gigpo_advantages,
    group_normalized_advantages,
    opid_advantages,
    step_group_advantages,
)

pytestmark = pytest.mark.unit


def test_grpo_statistics_over_all_step_samples():
    # Group "a": a 3-step success (score 1) and a 2-step failure (0): samples [1, 1, 1, 0, 0].
    # mean 0.6; squared deviations 3 * 0.16 + 2 * 0.36 = 1.2; unbiased var 1.2 / 4 = 0.3.
    advantages = group_normalized_advantages([1, 1, 1, 0, 0], ["a"] * 5, eps=0.0)
    std = math.sqrt(0.3)
    expected = torch.tensor([0.4 / std] * 3 + [-0.6 / std] * 2)
    assert torch.allclose(advantages, expected, atol=1e-6)


def test_grpo_per_trajectory_statistics_differ_from_cross_step():
    # Same samples, one value per trajectory: [1, 0], mean 0.5, unbiased std sqrt(0.5).
    advantages = group_normalized_advantages(
        [1, 1, 1, 0, 0], ["a"] * 5, eps=0.0, traj_ids=["t1", "t1", "t1", "t2", "t2"]
    )
    value = 0.5 / math.sqrt(0.5)
    assert torch.allclose(advantages, torch.tensor([value] * 3 + [-value] * 2), atol=1e-6)
    cross_step = group_normalized_advantages([1, 1, 1, 0, 0], ["a"] * 5, eps=0.0)
    assert not torch.allclose(advantages, cross_step)


def test_grpo_mean_only_and_eps():
    advantages = group_normalized_advantages([3.0, 1.0], ["g", "g"], std_normalize=False)
    assert torch.allclose(advantages, torch.tensor([1.0, -1.0]))
    # std of [3, 1] is sqrt(2); with eps = 1: 1 / (sqrt(2) + 1)
    advantages = group_normalized_advantages([3.0, 1.0], ["g", "g"], eps=1.0)
    assert torch.allclose(advantages, torch.tensor([1.0, -1.0]) / (math.sqrt(2) + 1.0))


def test_grpo_singleton_and_constant_groups_get_zero():
    advantages = group_normalized_advantages([5.0, 2.0, 2.0, 1.0, 3.0], ["solo", "same", "same", "x", "x"])
    assert advantages[0].item() == 0.0  # one sample: no unbiased std, advantage 0
    assert advantages[1].item() == 0.0 and advantages[2].item() == 0.0  # no spread
    assert advantages[3].item() < 0 < advantages[4].item()
    # with traj_ids, a group holding one trajectory of several steps is a singleton too
    advantages = group_normalized_advantages([1.0, 1.0], ["g", "g"], traj_ids=["t", "t"])
    assert torch.equal(advantages, torch.zeros(2))


def test_grpo_groups_interleaved_and_tensor_ids():
    advantages = group_normalized_advantages(torch.tensor([1.0, 10.0, 0.0, 20.0]), torch.tensor([0, 1, 0, 1]),
                                             std_normalize=False)
    assert torch.allclose(advantages, torch.tensor([0.5, -5.0, -0.5, 5.0]))


def test_grpo_rejects_bad_input():
    with pytest.raises(ValueError, match="group_ids has 1"):
        group_normalized_advantages([1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="different scores"):
        group_normalized_advantages([1.0, 2.0], ["a", "a"], traj_ids=["t", "t"])
    with pytest.raises(ValueError, match="spans groups"):
        group_normalized_advantages([1.0, 1.0], ["a", "b"], traj_ids=["t", "t"])


def test_step_group_advantages_mean_and_std():
    advantages = step_group_advantages([1.0, 3.0, 7.0], ["s", "s", "solo"])
    assert torch.allclose(advantages, torch.tensor([-1.0, 1.0, 0.0]))
    advantages = step_group_advantages([1.0, 3.0, 7.0], ["s", "s", "solo"], std_normalize=True, eps=0.0)
    assert torch.allclose(advantages, torch.tensor([-1.0 / math.sqrt(2), 1.0 / math.sqrt(2), 0.0]))


def test_gigpo_episode_plus_weighted_step_advantage_one_mode_for_both_terms():
    # Group g: trajectory A (2 steps, score 1), trajectory B (2 steps, score 0).
    # Anchors: A0 and B0 share state "start" (returns 0.9 and 0.2); A1 "kitchen" and B1
    # "hall" are singletons -> step advantage 0.
    scores = [1.0, 1.0, 0.0, 0.0]
    returns = [0.9, 1.0, 0.2, 0.0]
    anchors = ["start", "kitchen", "start", "hall"]
    # mean_norm (std_normalize=False): episode [1, 1, 0, 0] - 0.5 -> +-0.5; step +-0.35.
    mean_only = gigpo_advantages(scores, returns, ["g"] * 4, anchors, step_weight=2.0, eps=0.0)
    expected = torch.tensor([0.5 + 2 * 0.35, 0.5, -0.5 - 2 * 0.35, -0.5])
    assert torch.allclose(mean_only, expected, atol=1e-5)
    # mean_std_norm: episode std sqrt(1/3) -> +-0.5 * sqrt(3); step std 0.35 * sqrt(2) -> +-1/sqrt(2).
    normalised = gigpo_advantages(scores, returns, ["g"] * 4, anchors, step_weight=2.0, eps=0.0, std_normalize=True)
    episode, step = 0.5 * math.sqrt(3.0), 1 / math.sqrt(2.0)
    expected = torch.tensor([episode + 2 * step, episode, -episode - 2 * step, -episode])
    assert torch.allclose(normalised, expected, atol=1e-5)


def test_gigpo_step_std_normalize_and_fuzzy_anchor():
    scores = [1.0, 0.0]
    returns = [1.0, 0.0]
    # "room A" vs "room B": ratio 10/12 = 0.833 -> separate at 0.95, joined at 0.8
    exact = gigpo_advantages(scores, returns, ["g", "g"], ["room A", "room B"], eps=0.0, std_normalize=True)
    assert torch.allclose(exact, torch.tensor([1 / math.sqrt(2), -1 / math.sqrt(2)]), atol=1e-6)
    fuzzy = gigpo_advantages(scores, returns, ["g", "g"], ["room A", "room B"], eps=0.0,
                             similarity_threshold=0.8, std_normalize=True)
    # step group [1, 0]: mean 0.5, std sqrt(0.5) -> +-0.5 / sqrt(0.5) = +-1/sqrt(2)
    assert torch.allclose(fuzzy, torch.tensor([2 / math.sqrt(2), -2 / math.sqrt(2)]), atol=1e-6)


def test_opid_advantage_shift():
    episode = torch.tensor([1.0, -1.0])
    teacher = torch.tensor([[-1.0, -2.0], [-0.5, -3.0]])
    old = torch.tensor([[-2.0, -2.0], [-1.5, -1.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    advantages = opid_advantages(episode, teacher, old, mask, weight=0.1)
    assert torch.allclose(advantages, torch.tensor([[1.1, 1.0], [-0.9, -1.0]]))


def test_empo_advantage_groups_by_task_and_step_index():
    # task g: two rollouts, both 2 steps. Episode scores 1 and 0 -> +-0.5 * sqrt(3) (4 samples).
    # step 0 returns 2.0 vs 0.0 -> +-1/sqrt(2); step 1 returns 1.0 vs 1.0 -> 0.
    advantages = empo_advantages([1, 1, 0, 0], [2.0, 1.0, 0.0, 1.0], ["g"] * 4, [0, 1, 0, 1], eps=0.0)
    episode = 0.5 * math.sqrt(3.0)
    expected = torch.tensor([episode + 1 / math.sqrt(2), episode, -episode - 1 / math.sqrt(2), -episode])
    assert torch.allclose(advantages, expected, atol=1e-5)


def test_stepo_advantages_net_zero_per_group_on_trajectories_of_unequal_lengths():
    """STEPO's balance: a 3-step success and a 10-step failure in one group, a 2-step and a
    4-step episode in another. Statistics over step samples then 1/T_i (the earlier reading)
    netted +1.23 in the first group (+7.98 with the weights rescaled to mean 1)."""
    from hindsight.algorithms import stepo_advantages

    traj = ["s"] * 3 + ["f"] * 10 + ["a"] * 2 + ["b"] * 4
    groups = ["g"] * 13 + ["h"] * 6
    scores = [1.0] * 3 + [0.0] * 10 + [0.2] * 2 + [0.9] * 4
    advantages = stepo_advantages(scores, groups, traj)
    assert abs(float(advantages[:13].sum())) < 1e-6 and abs(float(advantages[13:].sum())) < 1e-6
    # each trajectory carries its trajectory-level advantage once: +-1/sqrt(2) * ... over T_i samples
    per_trajectory = group_normalized_advantages(scores, groups, traj_ids=traj)
    assert torch.allclose(advantages[:3].sum(), per_trajectory[0]) and torch.allclose(advantages[3:13].sum(), per_trajectory[3])
    mean_only = stepo_advantages(scores, groups, traj, std_normalize=False)
    assert torch.allclose(mean_only[:3], torch.full((3,), 0.5 / 3))

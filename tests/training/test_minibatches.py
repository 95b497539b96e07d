"""The ODYSSE episodic sampler (``training.minibatches``): whole episodes per mini-batch, so
per-episode normalisations computed inside a mini-batch equal the full-batch computation;
the plain shuffle breaks that (the check can fail). No model."""

from __future__ import annotations

import pytest
import torch

from hindsight import algorithms
from hindsight.training.minibatches import episodic_minibatches, epoch_minibatches, plain_minibatches

pytestmark = pytest.mark.unit

LENGTHS = [3, 1, 5, 2, 4, 1, 6, 2]
EPISODES = [f"e{e}" for e, length in enumerate(LENGTHS) for _ in range(length)]
"""24 step samples of 8 episodes, each episode's steps consecutive and in step order."""
REWARDS = torch.tensor([0.1 * ((7 * i) % 5) for i in range(len(EPISODES))])
GROUPS = [f"g{int(e[1:]) % 3}" for e in EPISODES]


def per_episode_figures(rows: list[int]) -> dict[str, torch.Tensor]:
    """Per-episode normalisations of the given rows, computed from those rows alone."""
    episodes = [EPISODES[i] for i in rows]
    rewards = REWARDS[rows]
    scores = torch.tensor([float(i % 3) for i in rows])
    return {
        "stepo_weight": algorithms.stepo_trajectory_weights(episodes),  # 1 / T_i
        "return_to_go": algorithms.discounted_returns(rewards, episodes, 0.9),  # needs the later steps
        # each step's score minus the mean over its episode's steps, and over their std
        "episode_centred": algorithms.group_normalized_advantages(scores, episodes, std_normalize=False),
        "episode_standardised": algorithms.group_normalized_advantages(scores, episodes, std_normalize=True),
    }


def check_equal_to_full_batch(batches: list[list[int]]) -> bool:
    full = per_episode_figures(list(range(len(EPISODES))))
    for rows in batches:
        for name, values in per_episode_figures(rows).items():
            if not torch.allclose(values, full[name][rows], atol=1e-6):
                return False
    return True


def test_episodic_minibatches_hold_whole_episodes_in_step_order():
    for seed in range(20):
        batches = episodic_minibatches(EPISODES, 8, torch.Generator().manual_seed(seed))
        flat = [i for rows in batches for i in rows]
        assert sorted(flat) == list(range(len(EPISODES)))  # every sample once
        owner = {}
        for number, rows in enumerate(batches):
            assert len(rows) <= 8
            for i in rows:
                assert owner.setdefault(EPISODES[i], number) == number  # an episode never spans two
            for a, b in zip(rows, rows[1:]):
                if EPISODES[a] == EPISODES[b]:
                    assert b == a + 1  # step order kept


def test_an_episode_longer_than_the_minibatch_is_one_of_its_own():
    batches = episodic_minibatches(EPISODES, 4, torch.Generator().manual_seed(0))
    long_ones = [rows for rows in batches if len(rows) > 4]
    assert sorted(len(rows) for rows in long_ones) == [5, 6]
    assert all(len({EPISODES[i] for i in rows}) == 1 for rows in long_ones)


def test_per_episode_normalisations_per_minibatch_equal_the_full_batch():
    for seed in range(20):
        batches = episodic_minibatches(EPISODES, 8, torch.Generator().manual_seed(seed))
        assert check_equal_to_full_batch(batches), seed


def test_the_plain_shuffle_breaks_them():
    """The same check fails for the plain sampler (so it is able to fail)."""
    failures = sum(not check_equal_to_full_batch(plain_minibatches(len(EPISODES), 8, torch.Generator().manual_seed(s))) for s in range(20))
    assert failures == 20


def test_plain_sampler_is_the_trainers_former_shuffle():
    """The plain option draws exactly what ``update_policy`` drew before ODYSSE existed."""
    generator, reference = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    batches = epoch_minibatches(EPISODES, 7, generator, episodic=False)
    order = torch.randperm(len(EPISODES), generator=reference).tolist()
    assert batches == [order[s : s + 7] for s in range(0, len(order), 7)]

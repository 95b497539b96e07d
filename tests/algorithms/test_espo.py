"""ESPO (our reading of ODYSSE's episode-level objective): known answers on hand-made
episodes, where the gradient goes, the clip at episode level, the split into parts, and the
reduction to token-level PPO when every episode is one token."""

from __future__ import annotations

import math

import pytest
import torch

from hindsight.algorithms import episode_minibatch_advantages, espo_loss, ppo_clip_loss

pytestmark = pytest.mark.unit


def two_episodes():
    """Episode 0: samples 0 and 1 (2 + 1 tokens), A = +1; episode 1: sample 2 (2 tokens), A = -1.
    Mean log-ratios: ln(1.5) for episode 0 (outside the clip), ln(0.9) for episode 1 (inside)."""
    mask = torch.tensor([[1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
    old = torch.tensor([[-1.0, -2.0], [0.0, -0.5], [-1.5, -0.7]])
    shift0, shift1 = math.log(1.5), math.log(0.9)
    # episode 0 token log-ratios: 0.5 s, 1.5 s, (pad), 1.0 s -> mean s; episode 1: 0.2 s, 1.8 s -> mean s
    log_ratio = torch.tensor([[0.5 * shift0, 1.5 * shift0], [7.0, 1.0 * shift0], [0.2 * shift1, 1.8 * shift1]])
    logp = (old + log_ratio).requires_grad_(True)
    return logp, old, torch.tensor([1.0, 1.0, -1.0]), mask, torch.tensor([0, 0, 1])


def test_two_episodes_known_answer():
    logp, old, advantages, mask, ids = two_episodes()
    loss, metrics = espo_loss(logp, old, advantages, mask, ids, clip_low=0.2, clip_high=0.2)
    # episode 0: r = 1.5, A = 1 -> min(1.5, 1.2) = 1.2, loss -1.2; episode 1: r = 0.9, A = -1 -> min(-0.9, -0.9), loss 0.9
    assert loss.item() == pytest.approx((-1.2 + 0.9) / 2, abs=1e-6)
    assert metrics["episode_clipfrac"] == pytest.approx(0.5)
    assert metrics["ratio_mean"] == pytest.approx((1.5 + 0.9) / 2, abs=1e-6)
    assert metrics["ratio_max"] == pytest.approx(1.5, abs=1e-6)
    assert metrics["episodes"] == 2.0
    token_mean, _ = espo_loss(logp, old, advantages, mask, ids, agg="token-mean")
    assert token_mean.item() == pytest.approx((3 * -1.2 + 2 * 0.9) / 5, abs=1e-6)


def test_clipped_episode_gets_no_gradient_and_the_other_reaches_every_token():
    logp, old, advantages, mask, ids = two_episodes()
    loss, _ = espo_loss(logp, old, advantages, mask, ids)
    loss.backward()
    grad = logp.grad
    assert torch.count_nonzero(grad[:2]) == 0  # episode 0: r = 1.5 > 1.2 with A > 0, clipped side
    # episode 1: d/dlogp_t of (1/2) * (-A r) = 0.5 * r / n_e = 0.5 * 0.9 / 2 on each of its tokens
    torch.testing.assert_close(grad[2], torch.full((2,), 0.5 * 0.9 / 2))


def test_gradient_flows_to_every_token_of_an_unclipped_episode_including_other_steps():
    logp, old, _, mask, ids = two_episodes()
    loss, _ = espo_loss(logp, old, torch.tensor([-1.0, -1.0, 1.0]), mask, ids)  # A < 0 with r = 1.5: not clipped
    loss.backward()
    # episode 0: (1/2) * (+1 * r) -> 0.5 * 1.5 / 3 on each of its 3 tokens, nothing on the padding
    expected = torch.tensor([[0.25, 0.25], [0.0, 0.25]])
    torch.testing.assert_close(logp.grad[:2], expected)
    assert logp.grad[2].abs().min() > 0  # episode 1: r = 0.9, A = +1, inside the clip


def test_equals_token_level_ppo_when_each_episode_is_one_token():
    torch.manual_seed(0)
    logp = (torch.randn(6, 1) * 0.3).requires_grad_(True)
    old = torch.zeros(6, 1)
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.3, 2.0, -2.0])
    mask = torch.ones(6, 1)
    ids = torch.arange(6)
    for agg in ("episode-mean", "token-mean"):
        espo, _ = espo_loss(logp, old, advantages, mask, ids, clip_low=0.1, clip_high=0.15, agg=agg)
        (espo_grad,) = torch.autograd.grad(espo, logp)
        ppo, ppo_metrics = ppo_clip_loss(logp, old, advantages, mask, clip_low=0.1, clip_high=0.15, dual_clip=None)
        (ppo_grad,) = torch.autograd.grad(ppo, logp)
        assert float(espo) == pytest.approx(float(ppo), abs=1e-6)
        torch.testing.assert_close(espo_grad, ppo_grad)
        assert 0 < ppo_metrics["clipfrac"] < 1  # some are clipped, so the clip is compared too


def test_parts_with_episode_totals_sum_to_the_whole():
    """An episode split over two parts: the parts' losses and gradients add up to the whole."""
    logp, old, advantages, mask, ids = two_episodes()
    advantages = torch.tensor([-1.0, -1.0, 1.0])  # neither clipped, so every token has a gradient
    whole, _ = espo_loss(logp, old, advantages, mask, ids, clip_low=0.6, clip_high=0.6)
    (whole_grad,) = torch.autograd.grad(whole, logp)
    log_ratio = ((logp - old) * mask).detach()
    sums = torch.stack([log_ratio[:2].sum(), log_ratio[2].sum()])
    tokens = torch.tensor([3.0, 2.0])
    parts = [[0, 2], [1]]  # episode 0 is split between the two parts
    total, grad = 0.0, torch.zeros_like(logp)
    for rows in parts:
        loss, _ = espo_loss(
            logp[rows], old[rows], advantages[rows], mask[rows], ids[rows], clip_low=0.6, clip_high=0.6,
            episode_log_ratio_sum=sums, episode_tokens=tokens,
        )
        total += float(loss)
        grad += torch.autograd.grad(loss, logp)[0]
    assert total == pytest.approx(float(whole), abs=1e-6)
    torch.testing.assert_close(grad, whole_grad)


def test_minibatch_advantages_recentre_over_episodes_each_counted_once():
    advantages = torch.tensor([2.0, 2.0, 2.0, 0.0, 1.0])  # episode 7 has three steps, 3 one, 5 one
    ids = torch.tensor([7, 7, 7, 3, 5])
    centred = episode_minibatch_advantages(advantages, ids, scale=False)
    torch.testing.assert_close(centred, torch.tensor([1.0, 1.0, 1.0, -1.0, 0.0]))  # mean over episodes is 1, not 1.4
    scaled = episode_minibatch_advantages(advantages, ids)
    std = math.sqrt(2 / 3)
    torch.testing.assert_close(scaled, torch.tensor([1.0, 1.0, 1.0, -1.0, 0.0]) / (std + 1e-6))
    alone = episode_minibatch_advantages(torch.tensor([0.7, 0.7]), torch.tensor([4, 4]))
    torch.testing.assert_close(alone, torch.tensor([0.7, 0.7]))  # one episode: nothing to centre against


def test_refuses_unknown_aggregation_and_half_given_totals():
    logp, old, advantages, mask, ids = two_episodes()
    with pytest.raises(ValueError, match="agg"):
        espo_loss(logp, old, advantages, mask, ids, agg="seq-mean-token-sum")
    with pytest.raises(ValueError, match="episode_tokens"):
        espo_loss(logp, old, advantages, mask, ids, episode_log_ratio_sum=torch.zeros(2))

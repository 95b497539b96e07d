"""Known-answer tests of the decoupled PPO loss (stale rollouts): it equals ``ppo_clip_loss``
when the behaviour policy is the proximal one, and otherwise weights each token's clipped
loss by pi_prox / pi_behav, the clip centred on the proximal policy."""

import math

import pytest
import torch

from hindsight.algorithms import decoupled_ppo_loss, ppo_clip_loss

pytestmark = pytest.mark.unit

MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
ADVANTAGES = torch.tensor([1.0, -1.0])


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
@pytest.mark.parametrize("dual_clip", [3.0, None])
def test_equals_ppo_clip_when_behaviour_is_proximal(agg, dual_clip):
    generator = torch.Generator().manual_seed(0)
    old = torch.randn(2, 3, generator=generator) - 1.0
    logp_a = (old + 0.6 * torch.randn(2, 3, generator=generator)).requires_grad_(True)
    logp_b = logp_a.detach().clone().requires_grad_(True)
    expected, expected_metrics = ppo_clip_loss(logp_a, old, ADVANTAGES, MASK, dual_clip=dual_clip, agg=agg)
    loss, metrics = decoupled_ppo_loss(logp_b, old, old.clone(), ADVANTAGES, MASK, dual_clip=dual_clip, agg=agg)
    assert torch.equal(loss, expected)
    for key, value in expected_metrics.items():
        assert metrics[key] == value, key
    assert metrics["behaviour_weight_mean"] == 1.0 and metrics["behaviour_weight_capped"] == 0.0
    expected.backward()
    loss.backward()
    assert torch.equal(logp_a.grad, logp_b.grad)


def test_weights_each_token_by_proximal_over_behaviour():
    # proximal = 0 (log 1) everywhere; ratios pi/pi_prox as in test_policy_losses:
    #   A=+1: r=1.5 -> -1.2 (clipped), r=0.5 -> -0.5;  A=-1: r=0.5 -> 0.8, r=4 -> 3.0 (dual), r=1 -> 1.0
    # behaviour log-probs give weights w = pi_prox / pi_behav of 2, 0.5, -, 1, 4, 0.25
    ratios = torch.tensor([[1.5, 0.5, 7.0], [0.5, 4.0, 1.0]])
    weights = torch.tensor([[2.0, 0.5, 1.0], [1.0, 4.0, 0.25]])
    logp = ratios.log().requires_grad_(True)
    proximal = torch.zeros(2, 3)
    behaviour = -weights.log()
    loss, metrics = decoupled_ppo_loss(logp, proximal, behaviour, ADVANTAGES, MASK)
    assert loss.item() == pytest.approx((2 * -1.2 + 0.5 * -0.5 + 1 * 0.8 + 4 * 3.0 + 0.25 * 1.0) / 5)
    assert metrics["clipfrac"] == pytest.approx(2 / 5)
    assert metrics["clipfrac_lower"] == pytest.approx(1 / 5)
    assert metrics["approx_kl"] == pytest.approx(-math.log(1.5 * 0.5 * 0.5 * 4.0 * 1.0) / 5)
    assert metrics["behaviour_weight_mean"] == pytest.approx((2 + 0.5 + 1 + 4 + 0.25) / 5)
    assert metrics["behaviour_weight_max"] == pytest.approx(4.0)
    loss.backward()
    # gradient only through the unclipped tokens, scaled by their weight: -A r w / 5
    expected_grad = torch.tensor([[0.0, -0.5 * 0.5, 0.0], [0.0, 0.0, 1.0 * 0.25]]) / 5
    assert torch.allclose(logp.grad, expected_grad, atol=1e-6)


def test_behaviour_weight_cap_truncates_the_weight():
    logp = torch.zeros(1, 2, requires_grad=True)
    behaviour = torch.tensor([[math.log(0.1), 0.0]])  # w = 10 and 1
    loss, metrics = decoupled_ppo_loss(
        logp, torch.zeros(1, 2), behaviour, torch.tensor([1.0]), torch.ones(1, 2), behaviour_weight_cap=2.0
    )
    assert loss.item() == pytest.approx((2.0 * -1.0 + 1.0 * -1.0) / 2)
    assert metrics["behaviour_weight_capped"] == pytest.approx(0.5)
    assert metrics["behaviour_weight_max"] == pytest.approx(2.0)


def test_bad_settings_are_refused():
    zeros = torch.zeros(1, 1)
    with pytest.raises(ValueError, match="behaviour_weight_cap"):
        decoupled_ppo_loss(zeros, zeros, zeros, torch.ones(1), torch.ones(1, 1), behaviour_weight_cap=0.0)
    with pytest.raises(ValueError, match="dual_clip"):
        decoupled_ppo_loss(zeros, zeros, zeros, torch.ones(1), torch.ones(1, 1), dual_clip=1.0)

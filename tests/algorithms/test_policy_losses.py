"""Known-answer tests of the token losses: PPO dual clip, gated (and ungated) distillation,
low-var KL."""

import math

import pytest
import torch

from hindsight.algorithms import kl_low_var, opd_loss, ppo_clip_loss

pytestmark = pytest.mark.unit

# Two sequences, three token slots. Sequence 0 has advantage +1 and two real tokens with
# ratios 1.5 and 0.5 (the third slot is padding); sequence 1 has advantage -1 and ratios
# 0.5, 4.0, 1.0. With eps 0.2 and c = 3 the per-token losses are:
#   A=+1, r=1.5: max(-1.5, -1.2) = -1.2 (clipped branch active)
#   A=+1, r=0.5: max(-0.5, -0.8) = -0.5
#   A=-1, r=0.5: max(0.5, 0.8) = 0.8 (clipped branch active, lower side of the ratio)
#   A=-1, r=4.0: max(4.0, 1.2) = 4.0 -> dual clip min(4.0, 3.0) = 3.0
#   A=-1, r=1.0: 1.0
RATIOS = torch.tensor([[1.5, 0.5, 7.0], [0.5, 4.0, 1.0]])
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
ADVANTAGES = torch.tensor([1.0, -1.0])


def _ppo(**kwargs):
    logp = RATIOS.log().clone().requires_grad_(True)
    old_logp = torch.zeros_like(logp)
    loss, metrics = ppo_clip_loss(logp, old_logp, kwargs.pop("advantages", ADVANTAGES), MASK, **kwargs)
    return logp, loss, metrics


def test_ppo_dual_clip_on_negative_advantage_and_metrics():
    logp, loss, metrics = _ppo()
    assert loss.item() == pytest.approx((-1.2 - 0.5 + 0.8 + 3.0 + 1.0) / 5)
    assert metrics["clipfrac"] == pytest.approx(2 / 5)
    assert metrics["clipfrac_lower"] == pytest.approx(1 / 5)
    assert metrics["approx_kl"] == pytest.approx(-math.log(1.5 * 0.5 * 0.5 * 4.0 * 1.0) / 5)
    loss.backward()
    # gradient only through unclipped, un-dual-clipped tokens: d(-A r)/dlogp = -A r, / 5 tokens
    expected_grad = torch.tensor([[0.0, -0.5, 0.0], [0.0, 0.0, 1.0]]) / 5
    assert torch.allclose(logp.grad, expected_grad, atol=1e-6)


def test_ppo_without_dual_clip_and_token_level_advantages():
    _, loss, metrics = _ppo(dual_clip=None)
    assert loss.item() == pytest.approx((-1.2 - 0.5 + 0.8 + 4.0 + 1.0) / 5)
    assert metrics["clipfrac_lower"] == 0.0
    _, loss_tokens, _ = _ppo(advantages=ADVANTAGES.unsqueeze(-1).expand(2, 3).clone())
    assert loss_tokens.item() == pytest.approx((-1.2 - 0.5 + 0.8 + 3.0 + 1.0) / 5)


def test_ppo_dual_clip_leaves_positive_advantages_alone():
    # A = +1 with ratio 4: the clipped branch gives -1.2; -A*c = -3 would be smaller but the
    # dual clip only applies to A < 0
    logp = torch.tensor([[math.log(4.0)]])
    loss, metrics = ppo_clip_loss(logp, torch.zeros(1, 1), torch.tensor([1.0]), torch.ones(1, 1))
    assert loss.item() == pytest.approx(-1.2)
    assert metrics["clipfrac"] == 1.0 and metrics["clipfrac_lower"] == 0.0


def test_ppo_aggregation_modes():
    _, loss, _ = _ppo(agg="seq-mean-token-mean")
    assert loss.item() == pytest.approx(((-1.2 - 0.5) / 2 + (0.8 + 3.0 + 1.0) / 3) / 2)
    _, loss, _ = _ppo(agg="seq-mean-token-sum")
    assert loss.item() == pytest.approx(((-1.2 - 0.5) + (0.8 + 3.0 + 1.0)) / 2)


def test_ppo_rejects_dual_clip_at_most_one():
    with pytest.raises(ValueError, match="dual_clip"):
        _ppo(dual_clip=1.0)


def test_opd_gate_values_metrics_and_gradient():
    # gaps (teacher - logp): 0, ln3/5, -ln3/5 -> gates 0.5, 0.75, 0.25; the 4th token is masked
    gaps = torch.tensor([[0.0, math.log(3) / 5], [-math.log(3) / 5, 2.0]])
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -3.0]], requires_grad=True)
    teacher = (logp.detach() + gaps).requires_grad_(True)
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss, metrics = opd_loss(logp, teacher, mask)
    gates = torch.tensor([[0.5, 0.75], [0.25, 0.0]])
    assert loss.item() == pytest.approx((0.75 * math.log(3) / 5 - 0.25 * math.log(3) / 5) / 3)
    assert metrics["gate_mean"] == pytest.approx(0.5)
    assert metrics["gate_active_ratio"] == pytest.approx(1 / 3)
    assert metrics["teacher_gap_mean"] == pytest.approx(0.0, abs=1e-7)
    loss.backward()
    # d loss / d logp = -g per token, divided by the 3 tokens of the token mean
    assert torch.allclose(logp.grad, -gates * mask / 3, atol=1e-6)
    assert teacher.grad is None or torch.count_nonzero(teacher.grad) == 0


def test_ungated_opd_is_the_plain_log_ratio_over_the_distilled_tokens():
    # the same tokens as above, gate fixed at 1: loss = mean over the 3 masked tokens of
    # (teacher - logp) = (0 + ln3/5 - ln3/5) / 3 = 0; the masked 4th token (gap 2) is left out
    gaps = torch.tensor([[0.0, math.log(3) / 5], [-math.log(3) / 5, 2.0]])
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -3.0]], requires_grad=True)
    teacher = logp.detach() + gaps
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss, metrics = opd_loss(logp, teacher, mask, gate="ungated")
    assert loss.item() == pytest.approx(0.0, abs=1e-7)
    assert metrics == pytest.approx({"gate_mean": 1.0, "gate_active_ratio": 1 / 3, "teacher_gap_mean": 0.0}, abs=1e-7)
    loss.backward()
    assert torch.allclose(logp.grad, -mask / 3, atol=1e-7)  # -1 per distilled token, / 3
    # unbalanced gaps: 0.5, 1.0 and -3.0 over 3 tokens -> -0.5 (the sigmoid gate would weigh -3 by ~0)
    logp = torch.zeros(1, 4, requires_grad=True)
    teacher = torch.tensor([[0.5, 1.0, -3.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    ungated, _ = opd_loss(logp, teacher, mask, gate="ungated", gate_beta=123.0)  # beta plays no part
    assert ungated.item() == pytest.approx(-1.5 / 3)
    assert ungated.item() == pytest.approx(((teacher - logp.detach()) * mask).sum().item() / 3)
    gated, _ = opd_loss(logp, teacher, mask)
    assert gated.item() > ungated.item() + 0.4


def test_opd_rejects_an_unknown_gate():
    with pytest.raises(ValueError, match="gate must be one of"):
        opd_loss(torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1, 1), gate="hard")


def test_opd_gradient_is_minus_gate_times_logprob_gradient_through_a_model():
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 5)
    features = torch.randn(2, 3, 4)
    tokens = torch.tensor([[1, 4, 2], [0, 3, 3]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    teacher = torch.randn(2, 3) - 1.5

    def token_logp():
        return torch.log_softmax(layer(features), dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)

    loss, _ = opd_loss(token_logp(), teacher, mask, gate_beta=5.0)
    loss_grads = torch.autograd.grad(loss, list(layer.parameters()))
    logp = token_logp()
    gate = torch.sigmoid(5.0 * (teacher - logp.detach()))
    surrogate = (-gate * logp * mask).sum() / mask.sum()  # sum_t -g_t * grad l_t / n
    expected_grads = torch.autograd.grad(surrogate, list(layer.parameters()))
    for got, expected in zip(loss_grads, expected_grads):
        assert torch.allclose(got, expected, atol=1e-6)


def test_kl_low_var_values_and_clamp():
    # d = ref - logp: 0 -> 0; 1 -> e - 2; -1 -> 1/e; 3 -> e^3 - 4 = 16.09 -> 10; -15 -> 14 -> 10
    logp = torch.zeros(6, requires_grad=True)
    ref = torch.tensor([0.0, 1.0, -1.0, 3.0, -15.0, 200.0])
    kl = kl_low_var(logp, ref)
    expected = torch.tensor([0.0, math.e - 2.0, math.exp(-1.0), 10.0, 10.0, 10.0])
    assert torch.allclose(kl, expected, atol=1e-6)
    kl.sum().backward()
    assert torch.isfinite(logp.grad).all()
    # d kl / d logp = 1 - exp(d) where not clamped
    assert logp.grad[1].item() == pytest.approx(1.0 - math.e, rel=1e-5)
    assert logp.grad[3].item() == 0.0

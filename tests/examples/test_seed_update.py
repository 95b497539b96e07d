"""``examples/seed_update.py`` walks one SEED update in one file; these tests hold it to the
library: on the same batch, its skills, teacher log-probs and advantages are ``SEED.analyze``'s
and ``SEED.advantages``', its loss terms are ``update_policy``'s (within 1e-6), and its
optimizer step moves the weights as the library's does.

The KL reference here is the start policy with a little noise, so that every term of the
loss (PPO, distillation, KL) is far from zero: leaving one out of the walk-through, or
weighing it differently, fails the comparison."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest
import torch

from hindsight.methods import MethodContext, build_method
from hindsight.methods.run import frozen_copy
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_update import update_policy

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "seed_update.py"
TOLERANCE = 1e-6
LOSS_KEYS = ("losses/ppo", "losses/opd", "kl/ref", "losses/total")


def load_example():
    spec = importlib.util.spec_from_file_location("seed_update_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def walk():
    """The example's module, its policy, a KL reference that differs from it, and the batch
    of steps 1-4 with their figures."""
    example = load_example()
    torch.manual_seed(0)
    policy = example.tiny_policy()
    reference = frozen_copy(policy.model)
    with torch.no_grad():
        for parameter in reference.parameters():
            parameter.add_(0.02 * torch.randn_like(parameter))
    batch, figures = example.prepared_batch(policy)
    return example, policy, reference, batch, figures


def library_update(example, policy, reference, batch, optimizer_class=torch.optim.SGD):
    """``update_policy`` (what ``train_rl`` runs) on a copy of ``policy``: (its metrics, the copy)."""
    policy = copy.deepcopy(policy)
    optimizer = optimizer_class([p for p in policy.model.parameters() if p.requires_grad], lr=1.0)
    method = build_method(example.CONFIG)
    metrics = update_policy(policy, reference, optimizer, batch, example.CONFIG, method, torch.Generator().manual_seed(0))
    return metrics, policy


def test_the_batch_has_what_every_loss_term_needs(walk):
    _, _, _, batch, figures = walk
    assert 0.0 < figures["rollout/success_rate"] < 1.0  # wins and losses: group-relative advantages
    assert figures["opd/skill_parse_rate"] == 1.0  # the compact grammar: every analysis parses
    assert figures["opd/distilled_sample_ratio"] == 1.0
    assert figures["advantages/nonzero_share"] > 0.5
    assert len(batch) == figures["rollout/samples"] and batch.skills is not None


def test_skills_teacher_logprobs_and_advantages_are_seeds(walk):
    """Steps 2-4 of the walk-through against ``SEED.analyze`` and ``SEED.advantages`` on a
    fresh copy of the same played batch."""
    example, policy, _, batch, figures = walk
    method = build_method(example.CONFIG, MethodContext(analyzer=example.ANALYZER))
    method.start(policy)
    same = RolloutBatch(table=batch.table, samples=batch.samples, played=batch.played)
    same.record_old_logprobs()
    metrics = method.analyze(policy, same, example.CONFIG)
    assert list(same.skills["skill"]) == list(batch.skills["skill"])
    assert metrics["opd/skill_parse_rate"] == figures["opd/skill_parse_rate"]
    assert metrics["opd/teacher_gap_mean"] == pytest.approx(figures["opd/teacher_gap_mean"], abs=TOLERANCE)
    for mine, theirs in zip(batch.teacher_logp, same.teacher_logp):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=TOLERANCE)
    advantages = method.advantages(same, example.CONFIG, example.SPEC.max_steps)
    torch.testing.assert_close(batch.advantages, advantages, rtol=0, atol=TOLERANCE)


def test_the_loss_equals_the_library_update(walk):
    example, policy, reference, batch, _ = walk
    model = copy.deepcopy(policy)
    model.model.train()
    _, mine = example.seed_loss(model, reference, batch)
    theirs, _ = library_update(example, policy, reference, batch)
    for key in LOSS_KEYS:
        assert abs(mine[key]) > 100 * TOLERANCE, f"{key} is too small for the comparison to see it"
        assert mine[key] == pytest.approx(theirs[key], rel=0, abs=TOLERANCE), key
    for key in ("opd/gate_mean", "opd/gate_active_ratio", "ppo/clipfrac"):
        assert mine[key] == pytest.approx(theirs[key], rel=0, abs=TOLERANCE), key
    assert 0.0 < mine["opd/gate_mean"] < 1.0


def test_one_optimizer_step_moves_the_weights_as_the_library_does(walk):
    """SGD with learning rate 1: the step is minus the clipped gradient, so equal steps mean
    equal gradients of the whole loss."""
    example, policy, reference, batch, _ = walk
    before = [p.detach().clone() for p in policy.model.parameters()]
    mine = copy.deepcopy(policy)
    figures = example.optimizer_step(mine, reference, batch, torch.optim.SGD(mine.model.parameters(), lr=1.0))
    metrics, theirs = library_update(example, policy, reference, batch)
    my_step = torch.cat([(p.detach() - b).flatten() for p, b in zip(mine.model.parameters(), before)])
    their_step = torch.cat([(p.detach() - b).flatten() for p, b in zip(theirs.model.parameters(), before)])
    assert my_step.abs().max() > 0
    torch.testing.assert_close(my_step, their_step, rtol=0, atol=1e-5 * float(their_step.abs().max()))
    assert figures["losses/grad_norm"] == pytest.approx(metrics["losses/grad_norm"], rel=1e-5)


def test_the_script_prints_every_step(capsys):
    load_example().main()
    out = capsys.readouterr().out
    for start in ("1. rollout", "2. own skill", "3. re-score", "4. advantages", "5. gate", "   loss", "6. step"):
        assert any(line.startswith(start) for line in out.splitlines()), start
    assert "parse rate 1.00" in out

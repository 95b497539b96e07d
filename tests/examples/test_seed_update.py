"""``examples/seed_update.py`` writes one SEED update out in full (the PPO clip, the gated
distillation, the entropy bonus and the KL inline); these tests hold it to the library's
SEED update, two implementations of the same math:

- steps 2-4 on the same played batch equal ``SEED.analyze`` and ``SEED.advantages``;
- the update, run by the example and by ``update_policy`` with ``SEED``'s loss terms on
  copies of one policy, logs the same loss terms and leaves the same weights (SGD at
  learning rate 1: the weights move by minus the clipped gradient each step, so equal
  weights after every step mean equal gradients), over cases with several epochs and
  mini-batches, micro-batching, the entropy bonus on, the KL off, and stale recorded
  log-probs that put tokens outside the clip and under the dual clip.

The KL reference is the start policy with a little noise, so that every term of the loss
is far from zero: leaving one out of either side, or weighing it differently, fails.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from hindsight.methods import MethodContext, build_method
from hindsight.training.checkpoint import frozen_copy
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig
from hindsight.training.update import update_policy

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "seed_update.py"
TOLERANCE = 1e-5
TERMS = ("losses/ppo", "losses/opd", "kl/ref", "losses/entropy", "losses/total")
FIGURES = ("ppo/clipfrac", "opd/gate_mean", "opd/gate_active_ratio", "losses/grad_norm")


def load_example():
    spec = importlib.util.spec_from_file_location("seed_update_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def library_config(args) -> RLConfig:
    """The run settings the example's ``Args`` stand for."""
    return RLConfig(
        algorithm="seed", tasks_per_update=args.tasks, group_size=args.group_size, learning_rate=args.learning_rate,
        ppo_epochs=args.ppo_epochs, mini_batch_size=args.mini_batch_size, micro_batch_tokens=args.micro_batch_tokens,
        kl_coef=args.kl_coef, entropy_coef=args.entropy_coef, max_grad_norm=args.max_grad_norm,
        ppo={"clip_low": args.clip_low, "clip_high": args.clip_high, "dual_clip": args.dual_clip},
        methods={"seed": {"opd_coef": args.opd_coef, "gate_beta": args.gate_beta}},
    )


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


def library_batch(example, batch, config: RLConfig) -> RolloutBatch:
    """The example's batch as the library's, its advantages ``SEED.advantages``'."""
    library = RolloutBatch(table=batch.table, samples=batch.samples, played=batch.table)
    library.old_logp, library.teacher_logp, library.skills = list(batch.old), list(batch.teacher), batch.skills
    library.advantages = build_method(config).advantages(library, config, example.SPEC.max_steps)
    return library


def test_the_example_writes_its_losses_itself():
    """No loss, advantage or update code of the library: the comparison below is between
    two implementations, not the library and itself."""
    imported = {
        node.module for node in ast.walk(ast.parse(EXAMPLE.read_text())) if isinstance(node, ast.ImportFrom) and node.module
    }
    for module in imported:
        assert not module.startswith(("hindsight.algorithms", "hindsight.methods")), module
        assert module not in {"hindsight", "hindsight.training.update", "hindsight.training.loss_terms"}, module


def test_the_batch_has_what_every_loss_term_needs(walk):
    _, _, _, batch, figures = walk
    assert 0.0 < figures["rollout/success_rate"] < 1.0  # wins and losses: group-relative advantages
    assert figures["opd/skill_parse_rate"] == 1.0  # the compact grammar: every analysis parses
    assert figures["opd/distilled_sample_ratio"] == 1.0
    assert figures["advantages/nonzero_share"] > 0.5
    assert len(batch.samples) == figures["rollout/samples"] and batch.skills is not None


def test_skills_teacher_logprobs_and_advantages_are_seeds(walk):
    """Steps 2-4 of the walk-through against ``SEED.analyze`` and ``SEED.advantages`` on a
    fresh copy of the same played batch."""
    example, policy, _, batch, figures = walk
    config = library_config(example.Args())
    method = build_method(config, MethodContext(analyzer=example.ANALYZER))
    method.start(policy)
    same = RolloutBatch(table=batch.table, samples=batch.samples, played=batch.table)
    same.record_old_logprobs()
    metrics = method.analyze(policy, same, config)
    assert list(same.skills["skill"]) == list(batch.skills["skill"])
    assert metrics["opd/skill_parse_rate"] == figures["opd/skill_parse_rate"]
    assert metrics["opd/teacher_gap_mean"] == pytest.approx(figures["opd/teacher_gap_mean"], abs=1e-6)
    for mine, theirs in zip(batch.teacher, same.teacher_logp):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-6)
    advantages = method.advantages(same, config, example.SPEC.max_steps)
    torch.testing.assert_close(batch.advantages, advantages, rtol=0, atol=1e-6)


CASES = {
    "two epochs, mini-batches, micro-batches": {},
    "entropy bonus, small mini-batches, small micro-batches": {
        "entropy_coef": 0.05, "mini_batch_size": 12, "micro_batch_tokens": 160,
    },
    "one pass over the whole batch, no KL": {"ppo_epochs": 1, "mini_batch_size": 64, "micro_batch_tokens": None, "kl_coef": 0.0},
    "stale log-probs: outside the clip and under the dual clip": {"stale": True, "entropy_coef": 0.01, "ppo_epochs": 1},
}


@pytest.mark.parametrize("case", CASES)
def test_the_update_equals_the_librarys(walk, case):
    example, policy, reference, batch, _ = walk
    settings = dict(CASES[case])
    stale = settings.pop("stale", False)
    args = dataclasses.replace(example.Args(), **settings)
    batch = copy.copy(batch)
    if stale:  # as if another policy had played: r = exp(+-1.5) on alternate samples
        batch.old = [old + (1.5 if i % 2 else -1.5) for i, old in enumerate(batch.old)]
    config = library_config(args)
    library = library_batch(example, batch, config)
    before = [p.detach().clone() for p in policy.model.parameters()]

    mine = copy.deepcopy(policy)
    figures = example.seed_update(
        mine, reference, batch, torch.optim.SGD(mine.model.parameters(), lr=1.0), torch.Generator().manual_seed(0), args
    )
    theirs = copy.deepcopy(policy)
    metrics = update_policy(
        theirs, reference, torch.optim.SGD(theirs.model.parameters(), lr=1.0), library, config, build_method(config),
        torch.Generator().manual_seed(0),
    )

    expected = {"losses/ppo", "losses/opd", "losses/total"} | ({"kl/ref"} if args.kl_coef else set())
    expected |= {"losses/entropy"} if args.entropy_coef else set()
    assert expected == {key for key in TERMS if key in figures} == {key for key in TERMS if key in metrics}
    for key in expected - {"losses/total"}:
        assert abs(figures[key]) > 100 * TOLERANCE, f"{key} is too small for the comparison to see it"
    for key in [*expected, *FIGURES]:
        assert figures[key] == pytest.approx(metrics[key], rel=TOLERANCE, abs=TOLERANCE), key
    assert metrics["faults/skipped_updates"] == 0.0
    if stale or args.ppo_epochs > 1:  # the clip is exercised, not only the ratio 1 of a first pass
        assert figures["ppo/clipfrac"] > 0.05
    if stale:
        assert metrics["ppo/clipfrac_lower"] > 0.05  # the dual clip bounds some tokens

    my_step = torch.cat([(p.detach() - b).flatten() for p, b in zip(mine.model.parameters(), before)])
    their_step = torch.cat([(p.detach() - b).flatten() for p, b in zip(theirs.model.parameters(), before)])
    assert my_step.abs().max() > 0
    torch.testing.assert_close(my_step, their_step, rtol=0, atol=1e-4 * float(their_step.abs().max()))


def test_the_script_prints_every_step(capsys):
    load_example().main()
    out = capsys.readouterr().out
    for start in ("1. rollout", "2. own skill", "3. re-score", "4. advantages", "5. gate", "   loss", "6. steps"):
        assert any(line.startswith(start) for line in out.splitlines()), start
    assert "parse rate 1.00" in out

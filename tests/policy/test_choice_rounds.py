"""Greedy constrained choices in rounds over one KV cache (``policy.choice_rounds``): after
every round each row's cached logits are those of a fresh pass over its prompt and the ids
chosen so far (fp32, 1e-4), and each choice is the one ``generate`` makes from scratch."""

from __future__ import annotations

import pytest
import torch

from hindsight.policy.choice_rounds import ChoiceRounds
from hindsight.policy.encoding import encode_prompt
from hindsight.policy.generation import SamplingConfig, generate


def fresh_logits(policy, ids):
    """The next-token logits after ``ids``, one unbatched pass from the start."""
    with torch.no_grad():
        return policy.model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()


def from_scratch(policy, continuations, options):
    """What one ``generate`` call makes of these continuations (the per-round decoder)."""
    config = SamplingConfig(temperature=0.0, constrained=True)
    generations = generate(policy, prompt_ids=continuations, config=config, valid_actions=options)
    return [(g.text, g.sample.response_ids[:-1]) for g in generations]


def test_rounds_over_the_cache_equal_fresh_passes(tiny_policy, gold_steps):
    steps = gold_steps[:9:2]
    prompts = [encode_prompt(tiny_policy.tokenizer, step["prompt"]) for step in steps]
    assert len({len(ids) for ids in prompts}) > 1  # left padding inside a chunk
    rounds = ChoiceRounds(tiny_policy, prompts, max_batch_tokens=2 * max(map(len, prompts)))  # several prefill chunks
    continuations = [list(ids) for ids in prompts]
    live = list(range(len(steps)))
    for round_index in range(3):
        options = [steps[(row + round_index) % len(steps)]["valid_actions"] + ([""] if round_index else []) for row in live]
        chosen = rounds.choose(live, options)
        assert chosen == from_scratch(tiny_policy, [continuations[row] for row in live], options)
        for row, (text, ids) in zip(live, chosen):
            continuations[row] += ids
        for position, row in enumerate(rounds.rows):
            torch.testing.assert_close(rounds.logits[position], fresh_logits(tiny_policy, continuations[row]), rtol=0, atol=1e-4)
        live = live[1:]  # one row ends after every round; the others read on over the same cache
    with pytest.raises(ValueError, match="dropped in an earlier round"):
        rounds.choose([0], [["look around"]])


def test_fits_needs_room_for_every_round(tiny_policy):
    assert ChoiceRounds.fits([100, 120], 30, 150, tiny_policy.model)
    assert not ChoiceRounds.fits([100, 121], 30, 150, tiny_policy.model)

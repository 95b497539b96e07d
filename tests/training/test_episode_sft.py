"""Multi-turn SFT (``training.episode_sft``): the sequences behaviour cloning trains on are,
token for token, the contexts the rollout engine builds in the multi-turn layout (truncation
chains included), the loss mask covers exactly every turn's action ids + EOS, and the loss is
the token mean of the step-wise response NLLs on the same contexts (fp32, 1e-5)."""

from __future__ import annotations

import copy
import dataclasses

import pandas as pd
import pytest
import torch

from hindsight.envs import make_env
from hindsight.policy.encoding import collate, encode_sample
from hindsight.policy.episode_context import EpisodeContext, header_text
from hindsight.policy.prompts import PromptConfig
from hindsight.rollout import RolloutConfig, run_rollouts
from hindsight.policy.skill_injection import inject_skill
from hindsight.training.episode_batches import episode_chains
from hindsight.training.episode_sft import (
    EpisodeSequence,
    TurnBudget,
    encode_examples,
    episode_sequences,
    multiturn_examples,
    sequence_nll,
    skill_conditioned,
)
from hindsight.training.sft import SFTConfig, response_nll, train_sft
from hindsight.policy.generation import SamplingConfig

MAX_LENGTH = 240
"""Short enough that the engine truncates contexts (chains of several sequences per episode)."""
BUDGET = TurnBudget(max_length=MAX_LENGTH, max_new_tokens=24, constrained=True)
SKILL = "do: take the object; put it where it belongs"


@pytest.fixture(scope="module")
def rollout(tiny_policy, twc_tasks):
    """The engine's multi-turn contexts: 3 twc episodes of the tiny policy, truncated."""
    config = RolloutConfig(
        sampling=SamplingConfig(temperature=1.0, max_length=MAX_LENGTH),
        group_size=1,
        max_parallel=3,
        seed=3,
        progress=False,
        layout="multiturn",
    )
    return run_rollouts(tiny_policy, make_env, twc_tasks, config)


@pytest.fixture(scope="module")
def examples(rollout, tmp_path_factory) -> pd.DataFrame:
    """The rollout's episodes as multi-turn behaviour-cloning rows (the played actions as
    the expert's), through a parquet round trip like the catalog's."""
    path = tmp_path_factory.mktemp("examples") / "bc_examples.parquet"
    multiturn_examples(rollout.table.sort_values(["episode_id", "step"]), PromptConfig()).to_parquet(path)
    return pd.read_parquet(path)


@pytest.fixture(scope="module")
def sequences(examples, tiny_policy) -> list[EpisodeSequence]:
    return episode_sequences(tiny_policy.tokenizer, examples, BUDGET)


def test_sequences_are_the_engine_contexts(rollout, sequences, tiny_policy):
    samples = rollout.samples
    assert rollout.stats["context_reprefills"] > 0  # the truncation rule is exercised
    chains = episode_chains(samples)
    assert len(chains) > rollout.table["episode_id"].nunique()  # some episode is several sequences
    built = {
        (seq.samples[0].episode_id.removeprefix("bc/").rsplit("#", 1)[0], tuple(s.step for s in seq.samples)): seq
        for seq in sequences
    }
    assert len(built) == len(sequences) == len(chains)
    eos = tiny_policy.tokenizer.eos_token_id
    for chain in chains:
        engine = [samples[i] for i in chain]
        sequence = built[(engine[0].episode_id, tuple(s.step for s in engine))]
        assert sequence.input_ids == engine[-1].input_ids
        for ours, theirs in zip(sequence.samples, engine):  # the same context at every turn, segments included
            assert ours.prompt_ids == theirs.prompt_ids and ours.response_ids == theirs.response_ids
            assert ours.header_length == theirs.header_length and ours.truncated_tokens == theirs.truncated_tokens
        # the mask is exactly every turn's action ids + EOS
        expected = [0] * len(sequence.input_ids)
        for sample in engine:
            expected[len(sample.prompt_ids) : len(sample.input_ids)] = [1] * len(sample.response_ids)
        assert sequence.loss_mask == expected
        masked = [token for token, on in zip(sequence.input_ids, sequence.loss_mask) if on]
        assert masked == [token for sample in engine for token in sample.response_ids]
        assert sum(token == eos for token in masked) == len(engine)


def test_the_header_is_the_engines_with_or_without_a_skill(examples, tiny_policy):
    tokenizer, config = tiny_policy.tokenizer, PromptConfig()
    task = examples["header"].iloc[0].removeprefix("Task: ").rstrip("\n")
    first = examples["episode_id"].iloc[0]
    conditioned = skill_conditioned(examples, {str(first): SKILL})
    assert set(conditioned["sequence"]) == {f"skill_bc/{first}"} and set(conditioned["kind"]) == {"skill_bc"}
    assert conditioned["prompt"].tolist() == examples.loc[examples["episode_id"] == first, "prompt"].tolist()
    for skill, header in ((None, examples["header"].iloc[0]), (SKILL, conditioned["header"].iloc[0])):
        engine = EpisodeContext.start(tokenizer, task, skill, config)
        assert header == header_text(task, skill, config)
        assert EpisodeContext.from_header(tokenizer, header).ids == engine.ids


def test_skill_conditioning_of_stepwise_examples_is_unchanged():
    examples = pd.DataFrame({"episode_id": ["a", "b"], "prompt": ["Task: x\nYour turn.\n", "Task: y\n"], "response": ["go", "look"]})
    conditioned = skill_conditioned(examples, {"a": SKILL})
    assert list(conditioned.columns) == ["episode_id", "prompt", "response", "kind"]
    assert conditioned["prompt"].tolist() == [inject_skill("Task: x\nYour turn.\n", SKILL)]


def stepwise_equivalents(sequences):
    """Each turn as a step-wise (prompt, response) sample on the context the layout implies."""
    return [dataclasses.replace(sample, header_length=None) for sequence in sequences for sample in sequence.samples]


def test_sequence_loss_is_the_stepwise_token_mean(sequences, tiny_policy):
    model, pad = tiny_policy.model, tiny_policy.tokenizer.pad_token_id
    model.eval()
    with torch.no_grad():
        loss, count = sequence_nll(model, sequences, pad)
        expected, expected_count = response_nll(model, collate(stepwise_equivalents(sequences), pad))
    assert count == expected_count == sum(sequence.loss_tokens for sequence in sequences)
    assert abs(loss.item() - expected.item()) < 1e-5
    # the same gradients (a copy of the model, fp32)
    grads = []
    for compute in (
        lambda m: sequence_nll(m, sequences, pad)[0],
        lambda m: response_nll(m, collate(stepwise_equivalents(sequences), pad))[0],
    ):
        replica = copy.deepcopy(model)
        compute(replica).backward()
        grads.append([p.grad for p in replica.parameters() if p.requires_grad])
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*grads))


def test_train_sft_logs_the_known_loss_of_a_mixed_batch(examples, sequences, tiny_policy):
    """One optimizer step over multi-turn rows and (prompt, response) pairs, cut into several
    micro-batches: the logged loss is the token mean over every loss token, as computed
    step-wise before the step."""
    pairs = pd.DataFrame({"prompt": ["Task: put things away\nYour turn.\n", "Summarise the episode.\n"], "response": ["look around", "do: look"]})
    mixture = pd.concat([examples, pairs.assign(kind="analyzer")], ignore_index=True)
    tokenizer, pad = tiny_policy.tokenizer, tiny_policy.tokenizer.pad_token_id
    units = encode_examples(tokenizer, mixture, 768, BUDGET)
    assert sum(isinstance(unit, EpisodeSequence) for unit in units) == len(sequences)
    encoded_pairs = [encode_sample(tokenizer, p, r, max_length=768) for p, r in zip(pairs["prompt"], pairs["response"])]
    everything = stepwise_equivalents(sequences) + encoded_pairs
    with torch.no_grad():
        tiny_policy.model.eval()
        expected, _ = response_nll(tiny_policy.model, collate(everything, pad))
    policy = copy.deepcopy(tiny_policy)
    config = SFTConfig(batch_size=len(units), max_steps=1, log_every=1, micro_batch_tokens=2 * MAX_LENGTH, weight_decay=0.0)
    history = train_sft(policy, mixture, config, turns=BUDGET)
    assert history["step"].tolist() == [1]
    assert abs(history["loss"].iloc[0] - expected.item()) < 1e-5


def test_multiturn_rows_need_the_rollout_budget(examples, tiny_policy):
    with pytest.raises(ValueError, match="no TurnBudget"):
        encode_examples(tiny_policy.tokenizer, examples, 768, None)

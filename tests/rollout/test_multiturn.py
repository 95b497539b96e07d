"""The multi-turn layout of the rollout engine on the real TextWorldExpress environment: one
growing token sequence per episode, its KV cache kept across turns, truncated contexts
re-read and counted, recorded log-probs equal to a fresh forward pass."""

from __future__ import annotations

import pytest
import torch

from hindsight.envs import make_env
from hindsight.policy.encoding import collate
from hindsight.policy.episode_context import header_text
from hindsight.policy.generation import SamplingConfig
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.prompts import PromptConfig
from hindsight.rollout import RolloutConfig, run_rollouts
from hindsight.rollout.live_episode import TABLE_COLUMNS
from hindsight.rollout.stats import rollout_metrics


def multiturn_config(max_length: int = 2048, **changes) -> RolloutConfig:
    settings = dict(group_size=2, max_parallel=4, seed=3, progress=False, layout="multiturn")
    return RolloutConfig(**{**settings, "sampling": SamplingConfig(temperature=1.0, max_length=max_length), **changes})


@pytest.fixture(scope="module")
def result(tiny_policy, twc_tasks):
    """3 tasks x 2 episodes, 4 live at once: later episodes start next to cached ones."""
    return run_rollouts(tiny_policy, make_env, twc_tasks, multiturn_config())


def by_episode(samples):
    episodes = {}
    for sample in samples:
        episodes.setdefault(sample.episode_id, []).append(sample)
    return episodes


def assert_recorded_logprobs_match(policy, samples):
    """Each sample's recorded log-probs equal a fresh (uncached) pass over its ids."""
    for start in range(0, len(samples), 16):
        chunk = samples[start : start + 16]
        with torch.no_grad():
            recomputed = token_logprobs(policy.model, collate(chunk, policy.tokenizer.pad_token_id))
        for row, sample in enumerate(chunk):
            assert torch.allclose(recomputed[row, -len(sample.response_ids) :], sample.old_logprobs, atol=1e-5)


def test_table_and_samples(result):
    table, samples = result.table, result.samples
    assert list(table.columns) == TABLE_COLUMNS and table["episode_id"].nunique() == 6
    assert [(s.episode_id, s.step) for s in samples] == list(zip(table["episode_id"], table["step"]))
    assert all(action in valid for action, valid in zip(table["action"], table["valid_actions"]))
    assert all(sample.header_length and sample.header_length > 0 for sample in samples)
    assert result.stats["context_reprefills"] == 0


def test_each_turn_extends_the_episode_sequence(result, tiny_policy):
    tokenizer = tiny_policy.tokenizer
    rows = result.table.set_index(["episode_id", "step"])
    for episode_id, samples in by_episode(result.samples).items():
        first = samples[0]
        header = tokenizer(header_text(rows.loc[(episode_id, 0), "task"], None, PromptConfig()), add_special_tokens=False)
        assert first.prompt_ids[: first.header_length] == header["input_ids"]
        for before, after in zip(samples, samples[1:]):
            # token in / token out: the next context is this one plus the sampled ids, then the new segment
            assert after.prompt_ids[: len(before.input_ids)] == before.input_ids
            segment = tokenizer.decode(after.prompt_ids[len(before.input_ids) :])
            assert segment.startswith(f"Current observation: {' '.join(rows.loc[(episode_id, after.step), 'observation'].split())[:40]}")
            assert "Valid actions: " in segment
        for sample in samples:
            action = rows.loc[(episode_id, sample.step), "action"]
            assert sample.response_ids == tokenizer(action, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]


def test_recorded_logprobs_equal_a_fresh_pass(result, tiny_policy):
    assert_recorded_logprobs_match(tiny_policy, result.samples)


def test_same_seed_same_rollouts(result, tiny_policy, twc_tasks):
    again = run_rollouts(tiny_policy, make_env, twc_tasks, multiturn_config())
    assert again.table["action"].tolist() == result.table["action"].tolist()
    assert [s.input_ids for s in again.samples] == [s.input_ids for s in result.samples]


def test_truncated_contexts_are_reread_and_counted(tiny_policy, twc_tasks):
    limit = 240
    short = run_rollouts(tiny_policy, make_env, twc_tasks, multiturn_config(max_length=limit))
    reprefills = short.stats["context_reprefills"]
    assert reprefills > 0 and rollout_metrics(short.table)["rollout/context_reprefills"] == reprefills
    assert all(len(sample.input_ids) <= limit for sample in short.samples)
    truncated = [sample for sample in short.samples if sample.truncated_tokens > 0]
    assert truncated and all(sample.header_length > 0 for sample in truncated)  # oldest turns go, the task stays
    assert_recorded_logprobs_match(tiny_policy, short.samples)


def test_the_valid_action_list_is_an_option(tiny_policy, twc_tasks):
    for layout in ("multiturn", "stepwise"):
        config = multiturn_config(layout=layout, prompt=PromptConfig(show_valid_actions=False), max_steps=2)
        samples = run_rollouts(tiny_policy, make_env, twc_tasks[:1], config).samples
        texts = [tiny_policy.tokenizer.decode(sample.prompt_ids) for sample in samples]
        assert texts and not any("Valid actions" in text for text in texts), layout
    assert PromptConfig().show_valid_actions  # the default keeps the list


def test_an_unknown_layout_is_named():
    with pytest.raises(ValueError, match="rollout.layout must be one of stepwise, multiturn, got 'chat'"):
        RolloutConfig(layout="chat")

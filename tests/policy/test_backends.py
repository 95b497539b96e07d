"""Inference backends (``policy.backends``): CTranslate2 on a tiny converted policy samples
from the same distributions as the torch engine (its recorded log-probs are the learner's
recomputation), brings new weights in only when they changed, plays real rollouts through
the engine, and refuses what it cannot do with a message naming the setting."""

from __future__ import annotations

import copy

import pytest
import torch

from hindsight.envs import make_env
from hindsight.policy.backends import CTranslate2Backend, TorchBackend, make_backend, shared_backend
from hindsight.policy.constrained import ActionTrie
from hindsight.policy.generation import SamplingConfig
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.training.distillation import response_logprobs

PROMPTS = ["Task: put the objects away. You are in the kitchen.", "Task: put the objects away. You are in the kitchen.", "look around"]


def learner_logprobs(policy, generations) -> list[torch.Tensor]:
    """The torch model's recomputation of each generation's response (restricted where constrained)."""
    return response_logprobs(policy.model, [g.sample for g in generations], 8, policy.tokenizer.pad_token_id)


@pytest.fixture(scope="module")
def valid_actions(twc_spec):
    env = make_env(twc_spec)
    try:
        _, info = env.reset(seed=0)
        return list(info["valid_actions"])
    finally:
        env.close()


@pytest.fixture(scope="module")
def float32_backend(tiny_policy):
    backend = CTranslate2Backend("float32")
    backend.sync(tiny_policy)
    return backend


def test_constrained_rows_sample_the_learners_restricted_distribution(tiny_policy, float32_backend, valid_actions):
    config = SamplingConfig(temperature=1.0)
    generations = float32_backend.generate(
        tiny_policy, PROMPTS, config=config, valid_actions=[valid_actions] * 3, generator=torch.Generator().manual_seed(0)
    )
    trie = ActionTrie.from_actions(tiny_policy.tokenizer, valid_actions)
    for generation, recomputed in zip(generations, learner_logprobs(tiny_policy, generations)):
        assert generation.text in valid_actions and generation.finished
        assert generation.sample.allowed_ids == trie.allowed_along(generation.sample.response_ids)
        assert torch.allclose(generation.sample.old_logprobs, recomputed, atol=1e-4), (generation.sample.old_logprobs, recomputed)
    # a non-trivial choice was made: some token had more than one allowed id and a log-prob below 0
    assert any((generation.sample.old_logprobs < -1e-3).any() for generation in generations)


def test_sampling_follows_the_distribution_like_the_torch_engine(tiny_policy, float32_backend, valid_actions):
    """Over many draws the first-token frequencies of both backends agree (same distribution)."""
    config = SamplingConfig(temperature=1.0)
    counts = {}
    for name, backend in (("torch", TorchBackend()), ("ct2", float32_backend)):
        generations = backend.generate(
            tiny_policy, [PROMPTS[0]] * 200, config=config, valid_actions=[valid_actions] * 200, generator=torch.Generator().manual_seed(1)
        )
        texts = [g.text.split()[0] for g in generations]
        counts[name] = {word: texts.count(word) / len(texts) for word in set(texts)}
    for word in set(counts["torch"]) | set(counts["ct2"]):
        assert abs(counts["torch"].get(word, 0) - counts["ct2"].get(word, 0)) < 0.12, counts


def test_free_rows_record_the_learners_logprobs_and_stop_at_a_newline(tiny_policy, float32_backend):
    config = SamplingConfig(temperature=1.0, constrained=False, max_new_tokens=12, stop_at_newline=True)
    generations = float32_backend.generate(tiny_policy, PROMPTS, config=config, valid_actions=None, generator=torch.Generator().manual_seed(2))
    for generation, recomputed in zip(generations, learner_logprobs(tiny_policy, generations)):
        assert 1 <= len(generation.sample.response_ids) <= 12 and "\n" not in generation.text
        assert generation.sample.allowed_ids is None
        assert torch.allclose(generation.sample.old_logprobs, recomputed, atol=1e-4)


def test_weights_are_converted_only_when_they_changed(tiny_policy, valid_actions):
    policy = copy.deepcopy(tiny_policy)
    backend = CTranslate2Backend("float32")
    assert backend.sync(policy) > 0 and backend.sync(policy) == 0.0 and backend.syncs == 1
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=torch.Generator().manual_seed(3)) * 0.05)
    assert backend.sync(policy) > 0 and backend.syncs == 2
    generations = backend.generate(policy, PROMPTS, config=SamplingConfig(temperature=1.0), valid_actions=[valid_actions] * 3, generator=torch.Generator())
    for generation, recomputed in zip(generations, learner_logprobs(policy, generations)):
        assert torch.allclose(generation.sample.old_logprobs, recomputed, atol=1e-4)  # the new weights, not the old


def test_int8_rollouts_through_the_engine(tiny_policy, twc_tasks):
    config = RolloutConfig(
        sampling=SamplingConfig(temperature=1.0, max_length=1024), group_size=2, max_steps=3, max_parallel=4, progress=False,
        backend="ctranslate2", backend_compute_type="int8",
    )
    assert not config.inference_backend().exact and config.inference_backend() is shared_backend("ctranslate2", "int8")
    result = run_rollouts(tiny_policy, make_env, twc_tasks[:2], config)
    assert len(result.table) == len(result.samples) > 0 and result.stats["weight_sync_seconds"] > 0
    assert result.table.attrs["engine"]["rollout/weight_sync_s"] > 0
    recomputed = learner_logprobs(tiny_policy, [type("G", (), {"sample": s})() for s in result.samples])
    gap = torch.cat([(mine - s.old_logprobs).abs() for mine, s in zip(recomputed, result.samples)])
    assert 0 < float(gap.mean()) < 0.5  # int8 weights: close to the learner, not equal


def test_the_torch_backend_is_the_default_and_shared_backends_are_reused():
    assert isinstance(RolloutConfig().inference_backend(), TorchBackend) and RolloutConfig().inference_backend().exact
    assert shared_backend("ctranslate2", "float32") is shared_backend("ctranslate2", "float32")


def test_what_a_backend_cannot_do_names_the_setting(tiny_policy, twc_tasks):
    with pytest.raises(ValueError, match="rollout.backend must be one of torch, ctranslate2, got 'vllm'"):
        make_backend("vllm")
    with pytest.raises(ValueError, match="rollout.backend_compute_type must be one of"):
        make_backend("ctranslate2", "int4")
    with pytest.raises(ValueError, match="rollout.backend must be one of torch, ctranslate2, got 'vllm'"):
        RolloutConfig(backend="vllm")
    config = RolloutConfig(layout="multiturn", progress=False, backend="ctranslate2", backend_compute_type="float32")
    with pytest.raises(ValueError, match="only the torch backend has; set rollout.backend: torch"):
        run_rollouts(tiny_policy, make_env, twc_tasks[:1], config)


def test_a_pickled_backend_converts_again_at_its_first_sync(tiny_policy, float32_backend):
    """What the asynchronous rollout worker receives: the settings, not the loaded engine."""
    import pickle

    copy_of = pickle.loads(pickle.dumps(float32_backend))
    assert copy_of.engine is None and copy_of.compute_type == "float32"
    assert copy_of.sync(tiny_policy) > 0 and copy_of.engine is not None


def test_an_architecture_the_engine_cannot_convert_names_the_setting(tokenizer):
    """gpt-oss (learned sinks) has no CTranslate2 converter: the sync says so, not a traceback."""
    from hindsight.policy.model import build_policy

    policy = build_policy("tiny", tokenizer, seed=0, device="cpu", architecture="gpt_oss")
    with pytest.raises(ValueError, match="ctranslate2 cannot convert a GptOssForCausalLM policy .*set rollout.backend: torch"):
        CTranslate2Backend("float32").sync(policy)

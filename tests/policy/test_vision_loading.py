"""Vision policies load the way a user points at them, and refuse what they cannot do.

- a LLaVA-style directory loads with its stock processor, a Qwen2-VL-style one (when
  torchvision does not import) with its PIL image processor alone; each screenshot takes the
  number of placeholder ids its model's vision tower makes of it;
- a LoRA vision policy and the tiny screen policy save and load back with their screenshot
  reader, giving the same log-probs;
- a budget that would cut into the image, the multi-turn layout, a chat template that writes
  no image, and ``vision: true`` beside a ``model_dir`` are errors that say so;
- a text policy has no reader and its prompts encode as before; the behaviour-cloning stage
  builds and trains the screen policy under ``vision: true``.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from hindsight.config.stages import PolicyConfig
from hindsight.policy.encoding import collate, encode_prompt, encode_sample
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.model import build_policy, load_policy, save_policy
from hindsight.policy.prompts import render_for_model
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.policy.vision import screen_image
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.tasks import make_tasks
from hindsight.training.example_screens import example_screens

from toy_gui_env import SPEC, SquareScreen, texts
from vision_policies import expert_examples, expert_steps, make_policy

TORCHVISION = importlib.util.find_spec("torchvision") is not None


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    root = tmp_path_factory.mktemp("vision")
    return {kind: make_policy(kind, root) for kind in ("llava", "qwen2_vl", "screen")}


def _screen(seed: int = 1) -> np.ndarray:
    env = SquareScreen()
    env.reset(seed)
    return env.screenshot()


def _logprobs(policy, examples, screens) -> torch.Tensor:
    samples = [
        encode_sample(policy.tokenizer, prompt, response, max_length=512, image=screen_image(policy, shot))
        for prompt, response, shot in zip(examples["prompt"], examples["response"], example_screens(examples, screens))
    ]
    with torch.no_grad():
        return token_logprobs(policy.model, collate(samples, policy.tokenizer.pad_token_id))


def test_each_model_reads_screenshots_through_its_own_processor(policies):
    llava, qwen, screen = policies["llava"], policies["qwen2_vl"], policies["screen"]
    assert type(llava.vision.processor).__name__ == "LlavaProcessor"
    if not TORCHVISION:  # Qwen2-VL's full processor needs torchvision: the PIL image processor alone
        assert qwen.vision.processor is None
        assert type(qwen.vision.image_processor).__name__ == "Qwen2VLImageProcessorPil"
    counts = {kind: screen_image(policy, _screen()).token_count for kind, policy in policies.items()}
    assert counts == {"llava": 16, "qwen2_vl": 4, "screen": 4}  # (32/8)^2 patches; (32/8)^2 / 2^2 merged; a 2x2 grid
    image = screen_image(qwen, _screen())
    assert image.pixels["image_grid_thw"].tolist() == [[1, 4, 4]]
    assert screen_image(qwen, None) is None and policies["screen"].is_lora is False and llava.is_lora


@pytest.mark.parametrize("kind", ["llava", "screen"])
def test_a_vision_policy_saves_and_loads_back_with_its_reader(policies, kind, tmp_path):
    policy = policies[kind]
    examples, screens = expert_steps(range(2))
    loaded = load_policy(save_policy(policy, tmp_path / "saved"), device="cpu")
    assert loaded.vision is not None and type(loaded.vision) is type(policy.vision)
    assert loaded.is_lora == policy.is_lora
    assert torch.allclose(_logprobs(policy, examples, screens), _logprobs(loaded, examples, screens), atol=1e-5)


def test_a_budget_that_cuts_into_the_image_is_an_error(policies):
    policy = policies["llava"]
    image = screen_image(policy, _screen())
    prompt = expert_examples([0])["prompt"][0]
    with pytest.raises(ValueError, match="image tokens"):
        encode_sample(policy.tokenizer, prompt, "click top left", max_length=12, image=image)
    kept = encode_sample(policy.tokenizer, prompt, "click top left", max_length=60, image=image)
    assert kept.truncated_tokens > 0 and kept.prompt_ids.count(image.token_id) == image.token_count


def test_the_multiturn_layout_refuses_a_vision_policy(policies):
    config = RolloutConfig(layout="multiturn", progress=False)
    with pytest.raises(ValueError, match="stepwise"):
        run_rollouts(policies["screen"], SquareScreen, make_tasks(SPEC, "train", range(1)), config)


def test_a_chat_template_without_an_image_item_is_an_error(policies):
    policy = policies["qwen2_vl"]
    image = screen_image(policy, _screen())
    template = policy.tokenizer.chat_template
    try:
        policy.tokenizer.chat_template = "{% for m in messages %}{{ m['content'] if m['content'] is string else '' }}{% endfor %}"
        with pytest.raises(ValueError, match="exactly once"):
            encode_prompt(policy.tokenizer, "Task: click", image)
    finally:
        policy.tokenizer.chat_template = template


def test_vision_applies_to_the_embedded_policy_only():
    assert PolicyConfig().vision is False
    PolicyConfig(vision=True)
    with pytest.raises(ValueError, match="vision"):
        PolicyConfig(vision=True, model_dir="some/dir")
    with pytest.raises(ValueError, match="vision"):
        PolicyConfig(vision=True, architecture="gpt_oss")


def test_a_text_policy_has_no_reader_and_encodes_as_before():
    tokenizer = train_tokenizer(texts() * 4, vocab_size=300)
    policy = build_policy("tiny", tokenizer, seed=0, device="cpu")
    assert policy.vision is None and screen_image(policy, _screen()) is None
    prompt = expert_examples([0])["prompt"][0]
    assert encode_prompt(tokenizer, prompt) == tokenizer(render_for_model(tokenizer, prompt), add_special_tokens=False)["input_ids"]
    assert "<image>" not in tokenizer.get_vocab()
    assert collate([encode_sample(tokenizer, prompt, "click top left")], tokenizer.pad_token_id).images is None


def test_the_m_rope_positions_are_the_qwen2_vl_models_own(policies):
    """Left-padded rows with a screenshot: the log-probs the project computes (its own 3-D
    positions) equal the model's forward that derives them itself from ``mm_token_type_ids``."""
    policy = policies["qwen2_vl"]
    examples, screens = expert_steps(range(2))
    samples = [
        encode_sample(policy.tokenizer, prompt, response, max_length=512, image=screen_image(policy, shot))
        for prompt, response, shot in zip(examples["prompt"], examples["response"], example_screens(examples, screens))
    ]
    batch = collate(samples, policy.tokenizer.pad_token_id)
    assert len({len(sample.input_ids) for sample in samples}) > 1  # rows of different lengths: left padding
    token_id = samples[0].image.token_id
    pixels = {key: torch.cat([s.image.pixels[key] for s in samples]) for key in samples[0].image.pixels}
    base = policy.model.get_base_model()
    base.model.rope_deltas = None
    with torch.no_grad():
        ours = token_logprobs(policy.model, batch)
        logits = policy.model(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, mm_token_type_ids=(batch.input_ids == token_id).int(), **pixels
        ).logits.float()
    native = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, batch.input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = batch.response_mask[:, 1:].bool()
    assert torch.allclose(ours[:, 1:][mask], native[mask], atol=1e-4)


def test_the_behaviour_cloning_stage_builds_and_trains_the_screen_policy_under_vision_true():
    from hindsight.config import BehaviourCloningConfig, ProjectConfig
    from hindsight.pipelines.behaviour_cloning.nodes import build_initial_policy, train_base_policy
    from hindsight.training.sft import SFTConfig

    examples, screens = expert_steps(range(4))
    settings = BehaviourCloningConfig(policy=PolicyConfig(vision=True, vocab_size=300), sft=SFTConfig(max_steps=2, batch_size=4))
    policy = build_initial_policy(examples, ProjectConfig(), settings, None)
    assert type(policy.model).__name__ == "ScreenQwen2ForCausalLM" and policy.vision is not None
    encoder = policy.model.screen_encoder.projection.weight.detach().clone()
    policy, history = train_base_policy(policy, examples, ProjectConfig(), settings, screens)
    assert history["step"].iloc[-1] == 2 and not torch.equal(encoder, policy.model.screen_encoder.projection.weight.detach())

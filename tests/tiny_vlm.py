"""Tiny random image-text-to-text models written as a user's model directory (imported by the
vision-policy tests): no package ships small pretrained VLM weights, so the tests build them
from configs, save them with ``save_pretrained`` and load them by ``model_dir``.

- ``llava_dir``: a LLaVA-style model (a CLIP vision tower + a Qwen2 text model) with the
  stock ``LlavaProcessor`` (PIL image processor), which ``AutoProcessor`` loads back without
  torchvision; its chat template writes ``<image>`` for an image item.
- ``qwen2_vl_dir``: a Qwen2-VL-style model (its own vision tower, M-RoPE) with only the
  PIL image processor saved: ``AutoProcessor`` needs torchvision for Qwen2-VL (its video
  processor), so loading falls back to ``AutoImageProcessor``, the path a user without
  torchvision takes. ChatML with ``<|vision_start|><|image_pad|><|vision_end|>``.

Both tokenizers are byte-level BPE trained on the toy GUI game's texts plus the model's
special tokens.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import CLIPVisionConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor, Qwen2Config
from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from hindsight.policy.tokenizer import train_tokenizer

from toy_gui_env import SCREEN, texts

LLAVA_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] | upper }}: "
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>{% else %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
QWEN2_VL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=1024, initializer_range=0.1)
"""The text model's size. Initialised wider than transformers' 0.02: with tied embeddings that
small, every logit of a random 64-wide model stays near 0 and a rank-4 adapter moves the
loss little in tens of steps (5.8 -> 5.0 in 30 steps, measured; 5.8 -> 1.3 at 0.1)."""


def _tokenizer(special: list[str], template: str):
    tokenizer = train_tokenizer(texts() * 8, vocab_size=400)
    tokenizer.add_special_tokens({"additional_special_tokens": special}, replace_extra_special_tokens=False)
    tokenizer.chat_template = template
    return tokenizer


def _ids(tokenizer) -> dict:
    return dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)


def llava_dir(directory: Path, seed: int = 0) -> Path:
    """Write the LLaVA-style model, its processor and tokenizer to ``directory``."""
    tokenizer = _tokenizer(["<image>"], LLAVA_TEMPLATE)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                       image_size=SCREEN, patch_size=8, projection_dim=32),
        text_config=Qwen2Config(vocab_size=len(tokenizer), tie_word_embeddings=True, **TEXT, **_ids(tokenizer)),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"), vision_feature_select_strategy="default",
        vision_feature_layer=-1, tie_word_embeddings=True,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    image_processor = LlavaImageProcessorPil(size={"shortest_edge": SCREEN}, crop_size={"height": SCREEN, "width": SCREEN})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=8,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1, chat_template=LLAVA_TEMPLATE)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return Path(directory)


def qwen2_vl_dir(directory: Path, seed: int = 0) -> Path:
    """Write the Qwen2-VL-style model, its PIL image processor and tokenizer to ``directory``."""
    tokenizer = _tokenizer(["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|image_pad|>", "<|vision_end|>"], QWEN2_VL_TEMPLATE)
    start, pad, end = tokenizer.convert_tokens_to_ids(["<|vision_start|>", "<|image_pad|>", "<|vision_end|>"])
    config = Qwen2VLConfig(
        text_config=dict(vocab_size=len(tokenizer), rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}, **TEXT, **_ids(tokenizer)),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=TEXT["hidden_size"], num_heads=2, patch_size=8, spatial_merge_size=2,
                           temporal_patch_size=2, in_chans=3, mlp_ratio=2),
        image_token_id=pad, video_token_id=pad, vision_start_token_id=start, vision_end_token_id=end,
        initializer_range=TEXT["initializer_range"],
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2VLForConditionalGeneration(config)
    image_processor = Qwen2VLImageProcessorPil(patch_size=8, merge_size=2, temporal_patch_size=2,
                                               min_pixels=SCREEN * SCREEN, max_pixels=SCREEN * SCREEN)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    image_processor.save_pretrained(directory)
    return Path(directory)

"""The embedded tiny policy with a screenshot encoder (``behaviour_cloning.policy.vision: true``).

The Qwen2 causal LM of ``model.MODEL_PRESETS`` plus a small convolutional encoder: the
screenshot, resized to ``screen_size`` x ``screen_size``, goes through two strided
convolutions and an average pool onto a ``screen_grid`` x ``screen_grid`` grid; each cell
becomes one soft token (a linear map to the model's width plus a learned embedding of the
cell), written where the prompt holds the ``<image>`` placeholder ids (the end of the user
turn, ``policy.screens``). The cells keep their order, so where on the screen something is
reaches the LM as which soft token carries it.

It saves and loads as an ordinary model directory (``config.json`` with model type
``hindsight_screen_qwen2``, registered with transformers' auto classes here), the tokenizer
with its ``<image>`` token beside it. Off by default: the default policy is the text-only
``Qwen2ForCausalLM``, unchanged.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, Qwen2Config, Qwen2ForCausalLM

from hindsight.policy.fresh_model import seeded_model, token_config_kwargs
from hindsight.policy.screens import ScreenImage, check_screenshot, screenshot_key

SCREEN_MODEL_TYPE = "hindsight_screen_qwen2"
IMAGE_TOKEN = "<image>"
"""The placeholder token added to the tiny tokenizer of a vision policy."""


class ScreenQwen2Config(Qwen2Config):
    """``Qwen2Config`` plus the screenshot encoder's settings."""

    model_type = SCREEN_MODEL_TYPE

    def __init__(self, image_token_id: int = 0, screen_size: int = 32, screen_grid: int = 2, screen_channels: int = 16, **kwargs):
        self.image_token_id = image_token_id
        self.screen_size = screen_size
        self.screen_grid = screen_grid
        self.screen_channels = screen_channels
        super().__init__(**kwargs)


class ScreenEncoder(nn.Module):
    """Screenshot pixels [N, 3, S, S] -> soft tokens [N, grid * grid, hidden]."""

    def __init__(self, config: ScreenQwen2Config) -> None:
        super().__init__()
        channels = config.screen_channels
        self.convolutions = nn.Sequential(
            nn.Conv2d(3, channels, kernel_size=5, stride=2, padding=2),
            nn.GELU(),
            nn.Conv2d(channels, 2 * channels, kernel_size=3, stride=2, padding=1),
            nn.GELU(),
            nn.AdaptiveAvgPool2d(config.screen_grid),
        )
        self.projection = nn.Linear(2 * channels, config.hidden_size)
        self.cells = nn.Parameter(torch.zeros(config.screen_grid**2, config.hidden_size))

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        grid = self.convolutions(pixel_values).flatten(2).transpose(1, 2)  # [N, cells, channels]
        return self.projection(grid) + self.cells


class ScreenQwen2ForCausalLM(Qwen2ForCausalLM):
    """The tiny Qwen2 LM whose ``<image>`` ids read the screenshot encoder's soft tokens."""

    config_class = ScreenQwen2Config

    def __init__(self, config: ScreenQwen2Config) -> None:
        super().__init__(config)
        self.screen_encoder = ScreenEncoder(config)

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        position_ids=None,
        past_key_values=None,
        inputs_embeds=None,
        labels=None,
        use_cache=None,
        logits_to_keep=0,
        pixel_values: torch.Tensor | None = None,
        **kwargs,
    ):
        """``Qwen2ForCausalLM.forward``; with ``pixel_values`` (one image per group of
        placeholder ids, in order) the placeholders' embeddings are the encoder's tokens."""
        if input_ids is not None:
            placeholders = input_ids == self.config.image_token_id
            if pixel_values is None and bool(placeholders.any()):
                raise ValueError("the ids hold image placeholders but no pixel_values were given")
            if pixel_values is not None:
                inputs_embeds = self.model.embed_tokens(input_ids)
                tokens = self.screen_encoder(pixel_values.to(inputs_embeds.dtype))
                if int(placeholders.sum()) != tokens.shape[0] * tokens.shape[1]:
                    raise ValueError(
                        f"{int(placeholders.sum())} image placeholders for {tokens.shape[0]} screenshots of {tokens.shape[1]} tokens"
                    )
                inputs_embeds = inputs_embeds.masked_scatter(placeholders.unsqueeze(-1), tokens.reshape(-1, tokens.shape[-1]))
                input_ids = None
        return super().forward(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, past_key_values=past_key_values,
            inputs_embeds=inputs_embeds, labels=labels, use_cache=use_cache, logits_to_keep=logits_to_keep, **kwargs,
        )


AutoConfig.register(SCREEN_MODEL_TYPE, ScreenQwen2Config, exist_ok=True)
AutoModelForCausalLM.register(ScreenQwen2Config, ScreenQwen2ForCausalLM, exist_ok=True)


class TinyScreens:
    """Screenshots for the tiny screen policy: RGB resized (bilinear, antialiased) to
    ``screen_size`` squared, scaled to [-1, 1]; ``screen_grid`` squared placeholder ids."""

    def __init__(self, token_id: int, size: int, count: int) -> None:
        self.token_id, self.size, self.count = int(token_id), int(size), int(count)

    @classmethod
    def of(cls, config: ScreenQwen2Config) -> "TinyScreens":
        """The reader of a screen policy's config."""
        return cls(config.image_token_id, config.screen_size, config.screen_grid**2)

    def image(self, screenshot: np.ndarray, model) -> ScreenImage:
        array = check_screenshot(screenshot)
        pixels = torch.from_numpy(np.ascontiguousarray(array)).permute(2, 0, 1).unsqueeze(0).float() / 255.0
        pixels = torch.nn.functional.interpolate(pixels, size=(self.size, self.size), mode="bilinear", antialias=True)
        return ScreenImage({"pixel_values": pixels * 2.0 - 1.0}, self.token_id, self.count, screenshot_key(array), array)

    def save(self, directory) -> None:
        """Nothing beside the model: its config holds the reader's settings."""


def build_screen_model(sizes: dict[str, int], tokenizer, seed: int, max_position_embeddings: int) -> ScreenQwen2ForCausalLM:
    """A freshly initialised tiny screen model with the Qwen2 ``sizes`` (a value of
    ``model.MODEL_PRESETS``; ``model.build_policy`` makes it a policy); ``IMAGE_TOKEN`` is
    added to ``tokenizer`` (in place) when it lacks it."""
    if IMAGE_TOKEN not in tokenizer.get_vocab():
        tokenizer.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]}, replace_extra_special_tokens=False)
    config = ScreenQwen2Config(
        image_token_id=tokenizer.convert_tokens_to_ids(IMAGE_TOKEN),
        **token_config_kwargs(tokenizer, max_position_embeddings),
        **sizes,
    )
    return seeded_model(ScreenQwen2ForCausalLM, config, seed)

"""A step's screenshot in the policy's forward passes: the one image type from the rollout
to the loss (``ScreenImage``), how its placeholder ids enter a prompt, and what a forward over
a batch with images takes beside the ids.

A vision policy (``policy.vision``) turns the environment's screenshot into a ``ScreenImage``:
the model's own pixel inputs for it (``pixel_values``; ``image_grid_thw`` for Qwen2-VL-style
models), its placeholder id and how many placeholder ids stand for it (one per image feature
the model writes there). The image goes at the END of the user turn, after the step prompt's
text (``prompts.render_for_model`` with an image token), so that cutting a long prompt's
oldest tokens never cuts into it; a budget too small for the image and what follows it is an
error (``check_image_kept``), never a silently broken image.

Every forward over ids that hold an image passes its pixel inputs (rows' images concatenated
along dim 0, in row order: the models fill their placeholder ids in that order) and, for
models with multimodal rotary positions (Qwen2-VL's M-RoPE, found by the model's
``get_rope_index``), the 3-D positions the model computes for left-padded rows. Text tokens
after the image keep equal positions in the three axes, so a decode step continues them with
ordinary 1-D positions (the model expands them), as generation does.

Nothing here runs for a text policy: a batch without images goes through unchanged.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch


@dataclass(eq=False)
class ScreenImage:
    """One step's screenshot as the policy's model reads it."""

    pixels: dict[str, torch.Tensor]
    """The model's pixel inputs for this image (``pixel_values``, and ``image_grid_thw`` for
    Qwen2-VL-style models), the image's rows first: a batch concatenates them along dim 0."""
    token_id: int
    """The image placeholder id (the model config's ``image_token_id``)."""
    token_count: int
    """How many placeholder ids stand for the image in a prompt."""
    key: str
    """A digest of the screenshot: identical prompts with the same screen are read once."""
    screenshot: np.ndarray | None = field(default=None, repr=False)
    """The screen as the environment rendered it (RGB ``uint8`` (H, W, 3)), kept as given."""


def screenshot_key(screenshot: np.ndarray) -> str:
    """A digest of a screenshot's shape and bytes."""
    array = np.ascontiguousarray(screenshot)
    digest = hashlib.blake2b(repr(array.shape).encode(), digest_size=16)
    digest.update(array.tobytes())
    return digest.hexdigest()


def check_screenshot(screenshot: Any) -> np.ndarray:
    """The screenshot as an RGB ``uint8`` (H, W, 3) array; ValueError naming what it is otherwise."""
    array = np.asarray(screenshot)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3 or 0 in array.shape:
        raise ValueError(f"a screenshot is an RGB uint8 array of shape (height, width, 3), got {array.dtype} {array.shape}")
    return array


def expand_image(ids: Sequence[int], image: ScreenImage) -> list[int]:
    """``ids`` with its one image placeholder repeated ``image.token_count`` times.

    Raises:
        ValueError: The ids hold no placeholder or more than one (a chat template that
            writes no image item, or a prompt text that contains the image token).
    """
    ids = list(ids)
    found = [position for position, token in enumerate(ids) if token == image.token_id]
    if len(found) != 1:
        raise ValueError(
            f"a prompt with a screenshot must hold the image token (id {image.token_id}) exactly once after rendering, "
            f"found {len(found)}: does the chat template write an image item?"
        )
    at = found[0]
    return ids[:at] + [image.token_id] * image.token_count + ids[at + 1 :]


def check_image_kept(prompt_ids: Sequence[int], image: ScreenImage | None, max_length: int | None) -> None:
    """Raise ValueError when truncation to ``max_length`` cut into the image's placeholder ids."""
    if image is None:
        return
    kept = sum(1 for token in prompt_ids if token == image.token_id)
    if kept != image.token_count:
        raise ValueError(
            f"max_length={max_length} leaves {kept} of the screenshot's {image.token_count} image tokens: "
            "raise the budget (the image and the text after it must fit)"
        )


def batch_pixels(images: Sequence[ScreenImage | None], device) -> dict[str, torch.Tensor]:
    """The rows' pixel inputs concatenated along dim 0 in row order (rows without an image
    add nothing), on ``device``."""
    present = [image for image in images if image is not None]
    if not present:
        return {}
    keys = list(present[0].pixels)
    for image in present[1:]:
        if list(image.pixels) != keys:
            raise ValueError(f"screenshots of one batch carry different pixel inputs: {keys} and {list(image.pixels)}")
    return {key: torch.cat([image.pixels[key] for image in present], dim=0).to(device) for key in keys}


def _rope_index(model):
    """The model's multimodal rotary index function (``get_rope_index``), None without one."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    for candidate in (base, getattr(base, "model", None)):
        function = getattr(candidate, "get_rope_index", None)
        if callable(function):
            return function
    return None


def image_forward_inputs(
    model, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor, images: Sequence[ScreenImage | None]
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """What a forward over ``input_ids`` takes for the rows' images: (the pixel inputs, the
    position ids: 3-D [3, B, L] for M-RoPE models, else ``position_ids`` as given)."""
    pixels = batch_pixels(images, input_ids.device)
    if not pixels:
        return {}, position_ids
    dtype = next(model.parameters()).dtype
    pixels = {key: value.to(dtype) if value.is_floating_point() else value for key, value in pixels.items()}
    rope_index = _rope_index(model)
    if rope_index is None:
        return pixels, position_ids
    token_id = next(image.token_id for image in images if image is not None)
    positions, _ = rope_index(
        input_ids,
        mm_token_type_ids=(input_ids == token_id).int(),
        image_grid_thw=pixels.get("image_grid_thw"),
        attention_mask=attention_mask,
    )
    return pixels, positions


def last_positions(position_ids: torch.Tensor) -> torch.Tensor:
    """[B] each row's last position (the largest of the three M-RoPE axes for 3-D positions):
    the next token's position is one more."""
    if position_ids.dim() == 3:
        return position_ids[..., -1].amax(dim=0)
    return position_ids[:, -1]

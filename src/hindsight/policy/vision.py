"""Policies that see: how a vision policy turns a screenshot into its model's inputs, and how
any Hugging Face image-text-to-text model loads from a local directory.

A policy sees when ``Policy.vision`` is set (a ``ScreenReader``); it is None for a text
policy, and then nothing here runs. Two kinds:

- an image-text-to-text model (``AutoModelForImageTextToText``: LLaVA, Qwen2-VL, ...) loaded
  by ``load_policy`` from a ``model_dir`` whose ``config.json`` names such a model type. Its
  screenshots go through the directory's own image processor (``ProcessorScreens``): the
  stock ``AutoProcessor`` when it loads, else ``AutoImageProcessor`` alone (transformers
  then picks the PIL image processor where torchvision is missing; Qwen2-VL's full
  processor needs torchvision for its video part). How many placeholder ids an image takes
  is what the model's ``get_image_features`` returns for it (asked once per image size), so
  no model-specific rule is restated here. The chat template is the tokenizer's (the
  processor's when only it has one);
- the embedded tiny policy with ``behaviour_cloning.policy.vision: true``
  (``policy.screen_model``): its own small screenshot encoder, read by ``TinyScreens``.

``screen_image(policy, screenshot)`` is what the rollout and behaviour cloning call (SFT
finds each step's screenshot in the catalog's ``screenshots`` table by episode and step,
``training.example_screens``: no examples table holds pixels).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np
import torch

from hindsight.policy.screens import ScreenImage, check_screenshot, screenshot_key

logger = logging.getLogger(__name__)

class ScreenReader(Protocol):
    """What a vision policy's ``Policy.vision`` does (module docstring)."""

    token_id: int
    """The image placeholder id."""

    def image(self, screenshot: np.ndarray, model) -> ScreenImage:
        """The screenshot as the model's inputs."""

    def save(self, directory: Path) -> None:
        """Write what loading the policy's directory needs to read screenshots again."""


class ProcessorScreens:
    """Screenshots through a Hugging Face image processor (module docstring)."""

    def __init__(self, image_processor, token_id: int, processor=None) -> None:
        self.image_processor = image_processor
        self.processor = processor
        self.token_id = int(token_id)
        self._counts: dict[tuple, int] = {}

    def image(self, screenshot: np.ndarray, model) -> ScreenImage:
        array = check_screenshot(screenshot)
        outputs = self.image_processor(images=[array], return_tensors="pt")
        pixels = {name: value for name, value in outputs.items() if isinstance(value, torch.Tensor)}
        return ScreenImage(pixels, self.token_id, self._count(pixels, model), screenshot_key(array), array)

    def _count(self, pixels: dict[str, torch.Tensor], model) -> int:
        """Image features the model makes of these pixel inputs (its placeholder count)."""
        key = tuple(
            (name, tuple(value.shape), None if value.is_floating_point() else tuple(value.flatten().tolist()[:16]))
            for name, value in pixels.items()
        )
        if key not in self._counts:
            base = model.get_base_model() if hasattr(model, "get_base_model") else model
            if not hasattr(base, "get_image_features"):
                raise ValueError(f"{type(base).__name__} has no get_image_features: cannot tell how many image tokens a screenshot takes")
            device = next(base.parameters()).device
            with torch.no_grad():
                features = base.get_image_features(**{k: v.to(device) for k, v in pixels.items()}, return_dict=True)
            self._counts[key] = int(features.pooler_output[0].shape[0])
        return self._counts[key]

    def save(self, directory: Path) -> None:
        (self.processor or self.image_processor).save_pretrained(directory)


def screen_image(policy, screenshot: Any) -> ScreenImage | None:
    """A step's screenshot as ``policy``'s model reads it; None for a text policy or a step
    without a screen (the environment renders none)."""
    if policy.vision is None or screenshot is None:
        return None
    return policy.vision.image(screenshot, policy.model)


def model_type(directory: Path) -> str | None:
    """The ``model_type`` of a model directory's ``config.json`` (None without one)."""
    path = Path(directory) / "config.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text()).get("model_type")
    except json.JSONDecodeError as error:
        raise ValueError(f"Unreadable model config '{path}': {error}") from error


def is_vision_directory(directory: Path) -> bool:
    """Whether a model directory holds a model that sees: an image-text-to-text model type
    of transformers, or the embedded tiny policy with its screenshot encoder."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    from hindsight.policy.screen_model import SCREEN_MODEL_TYPE

    kind = model_type(directory)
    return kind == SCREEN_MODEL_TYPE or kind in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES


def load_vision_model(directory: Path, dtype: torch.dtype, tokenizer) -> tuple[Any, ScreenReader]:
    """(the model, its ``ScreenReader``) of a directory ``is_vision_directory`` accepts;
    gives ``tokenizer`` the processor's chat template when only the processor has one.

    Raises:
        ValueError: The model, or an image processor for it, does not load.
    """
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    from hindsight.policy.screen_model import SCREEN_MODEL_TYPE, TinyScreens

    if model_type(directory) == SCREEN_MODEL_TYPE:
        model = AutoModelForCausalLM.from_pretrained(directory, local_files_only=True, dtype=dtype)
        return model, TinyScreens.of(model.config)
    model = AutoModelForImageTextToText.from_pretrained(directory, local_files_only=True, dtype=dtype)
    processor, image_processor = _image_processing(directory)
    if processor is not None and not getattr(tokenizer, "chat_template", None) and getattr(processor, "chat_template", None):
        tokenizer.chat_template = processor.chat_template
    config = model.config
    token_id = getattr(config, "image_token_id", None)
    if token_id is None:
        token_id = getattr(config, "image_token_index", None)
    if token_id is None:
        raise ValueError(f"'{directory}': the model config names no image token (image_token_id)")
    return model, ProcessorScreens(image_processor, token_id, processor)


_LOAD_ERRORS = (ImportError, OSError, ValueError, KeyError, TypeError, AttributeError)


def _image_processing(directory: Path):
    """(the processor or None, the image processor) of a model directory."""
    from transformers import AutoImageProcessor, AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(directory, local_files_only=True)
        image_processor = getattr(processor, "image_processor", None)
        if image_processor is not None:
            return processor, image_processor
    except _LOAD_ERRORS as error:  # e.g. Qwen2-VL's video processor without torchvision
        logger.info("'%s': no full processor (%s); reading screenshots with the image processor alone", directory, error)
    try:
        return None, AutoImageProcessor.from_pretrained(directory, local_files_only=True)
    except _LOAD_ERRORS as error:
        raise ValueError(f"Could not load an image processor from '{directory}': {error}") from error


def check_vision_rollout(policy, layout: str, imagination, backend_name: str) -> None:
    """A vision policy plays the step-wise layout on the torch engine, without imagination.

    Raises:
        ValueError: naming the setting to change.
    """
    if policy.vision is None:
        return
    if layout != "stepwise":
        raise ValueError(
            f"rollout.layout: {layout} does not take a vision policy (its screenshots go into step-wise prompts): "
            "set rollout.layout: stepwise (docs/vision_policies.md)"
        )
    if imagination is not None:
        raise ValueError("in-response imagination (WM-R1) does not take a vision policy (docs/vision_policies.md)")
    if backend_name != "torch":
        raise ValueError(f"rollout.backend: {backend_name} does not take a vision policy: set rollout.backend: torch")


__all__: Sequence[str] = (
    "ProcessorScreens", "ScreenReader", "check_vision_rollout", "is_vision_directory",
    "load_vision_model", "screen_image",
)

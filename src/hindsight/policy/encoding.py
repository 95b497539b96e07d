"""The step sample and its encoding: (prompt, response) pairs as token ids, padded batches.

``StepSample`` is the one step-sample type of the project: the rollout engine creates it
(``generation.generate`` fills its tokens and behaviour log-probs, the engine its identity),
``table_samples.samples_from_table`` rebuilds it from a trajectory table, SFT builds it from text
(``encode_sample``), and distillation scoring and the RL update consume it as it is;
``collate`` turns a list of them into one ``TokenBatch``.

One rule everywhere (SFT, rollout, scoring, RL): the prompt (rendered through
``prompts.render_for_model``) and the response are tokenized SEPARATELY with
``add_special_tokens=False`` and concatenated, the response followed by EOS. Tokenizing them
together could merge characters across the boundary and shift which tokens the loss sees.

- Truncation: a sequence longer than ``max_length`` loses its OLDEST prompt tokens (the start
  of the prompt, i.e. the task line and the oldest history first); the response is never cut.
  The rollout engine truncates the prompt the same way before generating and stores the ids
  it actually used, so a trainer that encodes from those ids sees exactly what the actor saw.
- Padding is on the LEFT (all responses end at the last column, as in generation).
- ``response_mask`` is 1 exactly on the response tokens, EOS included.
- ``allowed_ids`` (optional) holds, for every response position, the token ids the
  constrained decoder allowed there (padded with -1); a response position whose row is all
  -1 is unrestricted (free generation).
- ``image`` (vision policies, ``screens``): the step's screenshot; its placeholder ids end the
  prompt ids, and every forward over the sample passes its pixels (``TokenBatch.images``).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Sequence

import torch

from hindsight.policy.prompts import render_for_model
from hindsight.policy.screens import ScreenImage, check_image_kept, expand_image

logger = logging.getLogger(__name__)


@dataclass(kw_only=True)
class StepSample:
    """One step sample, from the rollout engine (or a trajectory table, or an SFT pair) to
    the loss: who it belongs to, the prompt the model read and the response it wrote.

    The same sample can be re-scored under another prompt (the skill-augmented one) without
    touching its response tokens or their allowed-token sets: ``with_prompt`` swaps the
    prompt only, so the plain and the skill-augmented log-probs describe the same tokens
    under the same decoding rule.
    """

    episode_id: str = ""
    """The episode the step belongs to ("" outside rollouts, e.g. an SFT pair)."""
    group_id: str = ""
    """The episode's group (same task, same seed)."""
    step: int = 0
    """Index of the step in its episode."""
    prompt: str = ""
    """The prompt text (skill included when the episode had one), before the chat template;
    "" in the multi-turn layout, whose ids are never rebuilt from text."""
    prompt_ids: list[int]
    """The prompt ids the model read (chat template applied, oldest tokens cut to fit)."""
    response_ids: list[int]
    """The response ids, stop token (EOS) included."""
    allowed_ids: list[list[int]] | None = None
    """Per response token: the ids the constrained decoder allowed there ([] or None: free)."""
    old_logprobs: torch.Tensor | None = None
    """Float32 [len(response_ids)]: the behaviour log-probs recorded while sampling (T=1,
    restricted); None for a sample that was not sampled by the policy."""
    truncated_tokens: int = 0
    """How many of the oldest prompt tokens were dropped to fit ``max_length``."""
    max_length: int | None = None
    """The prompt + response token budget, kept when re-encoding under another prompt
    (None: no limit)."""
    header_length: int | None = None
    """Multi-turn layout (``policy.episode_context``): how many leading ``prompt_ids`` are the
    episode's header (task line; a skill goes right after it), 0 when truncation cut it.
    None: a step-wise prompt built from text."""
    image: ScreenImage | None = None
    """The step's screenshot for a vision policy (its placeholder ids end the prompt ids)."""

    @property
    def input_ids(self) -> list[int]:
        """Prompt ids followed by response ids."""
        return self.prompt_ids + self.response_ids

    @property
    def choice_positions(self) -> list[bool]:
        """Per response token: whether the policy had a choice there. Where the decoding
        restriction allowed a single id the token is forced: every log-prob of it is 0 and
        the distillation gate exactly 0.5, so it carries no signal and is left out of loss
        denominators and metrics."""
        if self.allowed_ids is None:
            return [True] * len(self.response_ids)
        return [len(ids) != 1 for ids in self.allowed_ids]

    def with_prompt(self, tokenizer, prompt: str) -> "StepSample":
        """The same response tokens, restriction and identity under another prompt text
        (cut to ``max_length`` like any prompt; the screenshot, if any, stays)."""
        encoded = encode_ids(
            encode_prompt(tokenizer, prompt, self.image), self.response_ids, self.max_length, self.allowed_ids, self.image
        )
        return dataclasses.replace(
            self, prompt=prompt, prompt_ids=encoded.prompt_ids, truncated_tokens=encoded.truncated_tokens
        )


@dataclass
class TokenBatch:
    """A left-padded batch of step samples. All tensors are [B, L] except ``allowed_ids``
    [B, L, A]. Every response ends at the last column, so ``[:, -response_width:]`` of any
    [B, L] tensor holds every sample's response right-aligned."""

    input_ids: torch.Tensor
    """Token ids, pad id on the left."""
    attention_mask: torch.Tensor
    """1 on real tokens, 0 on padding."""
    response_mask: torch.Tensor
    """1 where the token at that position is a response token (EOS included)."""
    response_width: int
    """The longest response of the batch, in tokens."""
    allowed_ids: torch.Tensor | None = None
    """Long [B, L, A]: ids allowed at each response position, -1 padded; None = unrestricted."""
    images: list[ScreenImage | None] | None = None
    """Per row, its screenshot (or None); None when no row has one (a text batch)."""

    @property
    def choice_mask(self) -> torch.Tensor:
        """[B, L] ``response_mask`` without the forced positions (exactly one allowed id;
        see ``StepSample.choice_positions``)."""
        if self.allowed_ids is None:
            return self.response_mask
        forced = (self.allowed_ids >= 0).sum(dim=-1) == 1
        return self.response_mask * (~forced).to(self.response_mask.dtype)

    @property
    def position_ids(self) -> torch.Tensor:
        """Positions counted from each row's first real token (what generation uses)."""
        return (self.attention_mask.long().cumsum(-1) - 1).clamp(min=0)

    def to(self, device: torch.device | str) -> "TokenBatch":
        """The same batch on ``device``."""
        return TokenBatch(
            input_ids=self.input_ids.to(device),
            attention_mask=self.attention_mask.to(device),
            response_mask=self.response_mask.to(device),
            response_width=self.response_width,
            allowed_ids=None if self.allowed_ids is None else self.allowed_ids.to(device),
            images=self.images,
        )

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def truncate_prompt(prompt_ids: Sequence[int], keep: int) -> tuple[list[int], int]:
    """Keep the last ``keep`` prompt tokens (the oldest are dropped).

    Returns:
        (kept ids, number dropped).
    """
    prompt_ids = list(prompt_ids)
    keep = max(int(keep), 0)
    dropped = max(len(prompt_ids) - keep, 0)
    return prompt_ids[dropped:], dropped


def encode_prompt(tokenizer, prompt: str, image: ScreenImage | None = None) -> list[int]:
    """Token ids of a prompt rendered for the model, without special tokens added; with an
    ``image``, its placeholder ids after the prompt text (``screens.expand_image``)."""
    if image is None:
        return tokenizer(render_for_model(tokenizer, prompt), add_special_tokens=False)["input_ids"]
    rendered = render_for_model(tokenizer, prompt, tokenizer.convert_ids_to_tokens(image.token_id))
    return expand_image(tokenizer(rendered, add_special_tokens=False)["input_ids"], image)


def encode_response(tokenizer, response: str, add_eos: bool = True) -> list[int]:
    """Token ids of a response, followed by EOS when ``add_eos``."""
    ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    return ids + [tokenizer.eos_token_id] if add_eos else ids


def encode_ids(
    prompt_ids: Sequence[int],
    response_ids: Sequence[int],
    max_length: int | None,
    allowed_ids: Sequence[Sequence[int]] | None = None,
    image: ScreenImage | None = None,
) -> StepSample:
    """Combine already tokenized prompt and response ids, truncating the prompt's start.

    Args:
        prompt_ids: Prompt token ids.
        response_ids: Response token ids (EOS included when the response has one).
        max_length: Longest prompt + response length kept (None: no limit).
        allowed_ids: Per response token, the ids the constrained decoder allowed.
        image: The screenshot whose placeholder ids the prompt ids hold (vision policies).

    Returns:
        The ``StepSample`` (no identity, no prompt text: set them with ``dataclasses.replace``).

    Raises:
        ValueError: The prompt is empty, the response alone does not fit next to one prompt
            token, or ``allowed_ids`` does not have one entry per response token (or the
            cut reached into an image's placeholder ids).
    """
    response_ids = list(response_ids)
    if max_length is not None and len(response_ids) >= max_length:
        raise ValueError(
            f"encode_ids: the response has {len(response_ids)} tokens, which leaves no room for the prompt "
            f"within max_length={max_length}."
        )
    if allowed_ids is not None and len(allowed_ids) != len(response_ids):
        raise ValueError(
            f"encode_ids: allowed_ids has {len(allowed_ids)} entries for {len(response_ids)} response tokens."
        )
    keep = len(prompt_ids) if max_length is None else max_length - len(response_ids)
    kept, dropped = truncate_prompt(prompt_ids, keep)
    if not kept:
        raise ValueError("encode_ids: the prompt is empty; the first response token needs a prompt token before it.")
    check_image_kept(kept, image, max_length)
    allowed = None if allowed_ids is None else [list(ids) for ids in allowed_ids]
    return StepSample(
        prompt_ids=kept, response_ids=response_ids, allowed_ids=allowed, truncated_tokens=dropped, max_length=max_length,
        image=image,
    )


def encode_sample(
    tokenizer,
    prompt: str,
    response: str,
    *,
    max_length: int = 1024,
    add_eos: bool = True,
    allowed_ids: Sequence[Sequence[int]] | None = None,
    image: ScreenImage | None = None,
) -> StepSample:
    """Tokenize one (prompt, response) pair by the rule in the module docstring.

    Args:
        tokenizer: The policy's tokenizer.
        prompt: The step prompt (``prompts.build_prompt``); rendered with the chat template
            when the tokenizer has one.
        response: The response text (an action, or analyzer JSON).
        max_length: Longest prompt + response length kept (oldest prompt tokens dropped).
        add_eos: Append the EOS token to the response.
        allowed_ids: Per response token (EOS included), the ids the decoder allowed.
        image: The step's screenshot (vision policies): its placeholder ids end the prompt.

    Returns:
        The ``StepSample`` (its ``prompt`` is ``prompt``; no identity).
    """
    encoded = encode_ids(
        encode_prompt(tokenizer, prompt, image),
        encode_response(tokenizer, response, add_eos=add_eos),
        max_length,
        allowed_ids=allowed_ids,
        image=image,
    )
    return dataclasses.replace(encoded, prompt=prompt)


def collate(samples: Sequence[StepSample], pad_token_id: int, pad_to_multiple_of: int | None = None) -> TokenBatch:
    """Left-pad step samples into a ``TokenBatch``.

    Args:
        samples: Step samples. ``allowed_ids`` is built when any sample has them
            (positions of samples without them are unrestricted: all -1).
        pad_token_id: The id written into padding positions.
        pad_to_multiple_of: Round the batch length up to a multiple of this. Under bf16
            autocast on CPU every new sequence length builds and keeps new oneDNN kernels
            (docs/measurements.md); few lengths, little memory.

    Returns:
        The batch; ``response_mask`` covers each sample's response ids exactly, and
        ``response_width`` is the longest response.
    """
    if not samples:
        raise ValueError("collate: no samples.")
    length = max(len(sample.input_ids) for sample in samples)
    if pad_to_multiple_of:
        length = -(-length // pad_to_multiple_of) * pad_to_multiple_of
    batch_size = len(samples)
    input_ids = torch.full((batch_size, length), int(pad_token_id), dtype=torch.long)
    attention_mask = torch.zeros((batch_size, length), dtype=torch.long)
    response_mask = torch.zeros((batch_size, length), dtype=torch.long)
    with_allowed = [sample for sample in samples if sample.allowed_ids is not None]
    allowed = None
    if with_allowed:
        width = max((len(ids) for sample in with_allowed for ids in sample.allowed_ids), default=1)
        allowed = torch.full((batch_size, length, max(width, 1)), -1, dtype=torch.long)
    for row, sample in enumerate(samples):
        ids = sample.input_ids
        start = length - len(ids)
        input_ids[row, start:] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, start:] = 1
        response_start = length - len(sample.response_ids)
        response_mask[row, response_start:] = 1
        if allowed is not None and sample.allowed_ids is not None:
            for offset, ids_here in enumerate(sample.allowed_ids):
                if ids_here:
                    allowed[row, response_start + offset, : len(ids_here)] = torch.tensor(ids_here, dtype=torch.long)
    return TokenBatch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        response_mask=response_mask,
        response_width=max(len(sample.response_ids) for sample in samples),
        allowed_ids=allowed,
        images=[sample.image for sample in samples] if any(sample.image is not None for sample in samples) else None,
    )

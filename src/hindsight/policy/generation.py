"""Batched generation for many prompts at once: KV cache, left padding, own token loop.

``generate`` answers a batch of prompts (one per live episode) in one call:

1. Each prompt is rendered (chat template if any), tokenized without special tokens, and
   cut to its newest ``max_length - response budget`` tokens (``encoding.truncate_prompt``;
   the budget is the row's longest valid action + EOS, or ``max_new_tokens``).
2. Prompts are sorted by length and cut into chunks of at most ``max_batch_tokens`` padded
   tokens; each chunk is one batch (on CPU, padding and masked attention over a mixed-length
   batch cost more than one big batch saves: docs/measurements.md).
   Within a chunk, identical prompts are prefilled once (the members of a group share their
   first prompt), left-padded, with positions counted from each row's first real token; only
   the last position goes through the LM head. The KV cache is then expanded to every row.
3. A token loop samples one token per live row per forward pass over the cache:
   - constrained rows walk a trie over their valid actions (``constrained.ActionTrie``):
     only the allowed ids are considered, renormalised;
   - free rows use the whole vocabulary and stop at EOS, at a token containing a newline
     (when ``stop_at_newline``) or one of ``stop_strings``, or after ``max_new_tokens``.
   Sampling uses ``temperature`` and ``top_p`` (temperature 0 = greedy) with a seeded
   ``torch.Generator``. Rows that finish leave the batch (their cache rows are dropped).
4. For every sampled token the log-prob under the policy's own T=1 distribution (restricted
   to the allowed ids for constrained rows) is recorded: the same quantity
   ``logprobs.token_logprobs`` recomputes from the returned ids (see its docstring).
5. Each prompt's answer is a ``Generation``: its text and an ``encoding.StepSample`` holding
   the prompt ids read, the response ids, their allowed ids and those log-probs.

A vision policy's prompts come with their step's screenshot (``images``: ``screens.ScreenImage``
per prompt, or None): its placeholder ids end the prompt ids, truncation never reaches them,
and the prefill passes the pixels (identical prompts are read once only with the same screen).

``generate_text`` is the free-text greedy wrapper (the analyzer writes JSON with it). The token
loop's pieces (prefill, one decode step, the constrained and free samplers) are
``policy.token_loop``'s, shared with the multi-turn and option-round decoders.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

from hindsight.params import ParameterError, build

from hindsight.policy.batching import token_budget_chunks
from hindsight.policy.constrained import ActionTrie, stop_token_ids
from hindsight.policy.encoding import StepSample, encode_prompt, truncate_prompt
from hindsight.policy.model import Policy
from hindsight.policy.screens import ScreenImage, check_image_kept
from hindsight.policy.token_loop import DecodeRow, decode_step, model_max_length, prefill, sample_constrained, sample_free

logger = logging.getLogger(__name__)


@dataclass
class SamplingConfig:
    """How responses are decoded: the project's one decoding settings class. The rollout
    engine holds it (``RolloutConfig.sampling``, the YAML's ``rollout.sampling``); a stage that
    decodes otherwise names only its changes to it (``sampling_changes``)."""

    max_new_tokens: int = 24
    """Most tokens a free-generation response may have (constrained ones end with their
    action). A skill (``AnalyzerConfig``) and a predicted observation (``WorldModelSettings``)
    are generated under their own bounds."""
    temperature: float = 0.4
    """Sampling temperature; 0 means greedy. Recorded log-probs are always at temperature 1
    (``policy.logprobs.LOGPROB_TEMPERATURE``). A stage that samples at its own names it among
    its changes (``{"temperature": 0.4}``: the skills stage's ``skills.sampling``, the teacher
    fit's, the held-out ``decodings``, the teacher endpoint's ``skills.openai.sampling``)."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0 = off)."""
    constrained: bool = True
    """Restrict decoding to the valid actions (a token trie); else free generation."""
    stop_at_newline: bool = True
    """Free generation ends at the first token containing a newline."""
    stop_strings: tuple[str, ...] = ()
    """Free generation also ends at the first token containing any of these; the text is cut
    before the first occurrence (e.g. ``('"',)`` to end a JSON string)."""
    min_new_tokens: int = 0
    """Free generation: EOS and stop tokens are masked out for this many first tokens (their
    recorded log-probs are then those of the masked distribution)."""
    max_length: int | None = None
    """Prompt + response token budget (None: the model's max_position_embeddings). Prompts
    are cut to their newest ``max_length - response budget`` tokens. Other sequences have
    their own budgets: a scored step (``ScoringConfig``), a training example (``SFTConfig``),
    a world-model query (``WorldModelSettings``, its SFT's)."""
    max_batch_tokens: int | None = None
    """Most padded prompt tokens (rows x longest prompt) per forward batch: prompts are
    sorted by length and generated in chunks under it. None: 2048 on CPU (padding and masked
    attention cost more there than batching saves), unlimited on GPU."""


def sampling_changes(changes: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """``changes`` checked as changes to a ``SamplingConfig`` (each key one of its fields,
    each value of its type; else ``params.ParameterError`` naming ``where.<key>``), as a new
    dict. A stage's block holds such changes (``skills.sampling``); ``RolloutConfig.at``
    applies them to the shared ``rollout.sampling``. A whole number given for a float field
    (``temperature: 0``) becomes a float."""
    if changes is not None and not isinstance(changes, Mapping):
        raise ParameterError(f"parameter '{where}' must be a mapping of SamplingConfig keys (e.g. {{temperature: 0.4}}), got {changes!r}")
    build(SamplingConfig, changes, where)
    floats = {field.name for field in dataclasses.fields(SamplingConfig) if field.type in (float, "float")}
    return {key: float(value) if key in floats else value for key, value in (changes or {}).items()}


@dataclass
class Generation:
    """What ``generate`` returns per prompt: the step sample it produced and its text.

    The tokens live only in ``sample`` (the project's one step-sample type); the rollout
    engine stamps the episode's identity on it and hands it to the trainer unchanged.
    """

    sample: StepSample
    """The prompt ids the model actually read (after truncation), the sampled ids (stop token
    included), their allowed ids (constrained rows, else None) and T=1 log-probs."""
    text: str
    """The response text: the valid action (constrained), or the decoded ids without special
    tokens, cut at the first newline when ``stop_at_newline`` and at the first stop string."""
    finished: bool
    """Ended with a stop token (False: cut at ``max_new_tokens``)."""


def generate(
    policy: Policy,
    prompts: Sequence[str] | None = None,
    *,
    config: SamplingConfig | None = None,
    valid_actions: Sequence[Sequence[str] | None] | None = None,
    generator: torch.Generator | None = None,
    prompt_ids: Sequence[Sequence[int]] | None = None,
    images: Sequence[ScreenImage | None] | None = None,
) -> list[Generation]:
    """Generate one response per prompt, all prompts in one batch.

    Args:
        policy: A ``model.Policy`` (model + tokenizer).
        prompts: Prompt texts (rendered with the chat template here), or None when
            ``prompt_ids`` are given.
        config: Decoding settings.
        valid_actions: Per prompt, the valid actions; required when ``config.constrained``.
            A row with None or an empty list is decoded freely.
        generator: Seeded RNG for sampling (a fresh seed-0 CPU generator when None).
        prompt_ids: Already tokenized prompts (used instead of ``prompts``; with ``images``,
            holding each image's placeholder ids).
        images: Per prompt, the step's screenshot (vision policies) or None.

    Returns:
        One ``Generation`` per prompt, in order (no identity on its sample).
    """
    config = config or SamplingConfig()
    model, tokenizer = policy.model, policy.tokenizer
    device = next(model.parameters()).device
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    if prompt_ids is None:
        if prompts is None:
            raise ValueError("generate: give prompts or prompt_ids.")
        if images is None:
            prompt_ids = [encode_prompt(tokenizer, prompt) for prompt in prompts]
        else:
            prompt_ids = [encode_prompt(tokenizer, prompt, image) for prompt, image in zip(prompts, images, strict=True)]
    if not prompt_ids:
        return []
    if config.constrained and valid_actions is None:
        raise ValueError("generate: constrained decoding needs valid_actions for every prompt.")
    if valid_actions is not None and len(valid_actions) != len(prompt_ids):
        raise ValueError(f"generate: {len(valid_actions)} valid-action lists for {len(prompt_ids)} prompts.")

    rows = _decode_rows(model, tokenizer, prompt_ids, valid_actions, images, config)

    # Chunks of rows sorted by prompt length (identical prompts adjacent) within the budget.
    token_budget = config.max_batch_tokens or (2048 if device.type == "cpu" else None)
    order = sorted(range(len(rows)), key=lambda index: (len(rows[index].prompt_ids), rows[index].prompt_ids))
    with torch.no_grad():
        for chunk in token_budget_chunks(order, [len(row.prompt_ids) for row in rows], token_budget):
            _decode(model, tokenizer, [rows[index] for index in chunk], config, generator, device)

    texts = prompts if prompts is not None else [""] * len(rows)
    return [
        Generation(
            sample=StepSample(
                prompt=text,
                prompt_ids=row.prompt_ids,
                response_ids=row.ids,
                allowed_ids=row.allowed,
                old_logprobs=torch.tensor(row.logprobs, dtype=torch.float32),
                truncated_tokens=row.dropped,
                max_length=config.max_length,
                image=row.image,
            ),
            text=response_text(tokenizer, row, config),
            finished=row.finished,
        )
        for row, text in zip(rows, texts)
    ]


def _decode_rows(
    model, tokenizer, prompt_ids: Sequence[Sequence[int]], valid_actions: Sequence[Sequence[str] | None] | None,
    images: Sequence[ScreenImage | None] | None, config: SamplingConfig,
) -> list[DecodeRow]:
    """One ``DecodeRow`` per prompt: its valid-action trie (constrained rows), its response
    limit, its prompt cut to fit ``max_length`` with that limit, and its screenshot."""
    rows = [
        DecodeRow(ActionTrie.from_actions(tokenizer, actions) if config.constrained and actions else None)
        for actions in (valid_actions if valid_actions is not None else [None] * len(prompt_ids))
    ]
    max_length = config.max_length or model_max_length(model)
    for row, ids in zip(rows, prompt_ids):
        # A constrained row's response is at most its longest action (+ EOS).
        row.limit = row.trie.depth if row.trie is not None else config.max_new_tokens
        row.prompt_ids, row.dropped = truncate_prompt(ids, max_length - row.limit)
        if not row.prompt_ids:
            raise ValueError(f"generate: max_length={max_length} leaves no room for the prompt (response {row.limit}).")
    if images is not None:
        for row, image in zip(rows, images, strict=True):
            check_image_kept(row.prompt_ids, image, max_length)
            row.image = image
    return rows


def response_text(tokenizer, row: DecodeRow, config: SamplingConfig) -> str:
    """A decoded row's text: its valid action (constrained), else ``free_text`` of its ids."""
    if row.trie is not None:
        action = row.trie.action_for(row.ids)
        if action is not None:
            return action
    return free_text(tokenizer, row.ids, config)


def free_text(tokenizer, ids: Sequence[int], config: SamplingConfig) -> str:
    """A free response's text: the decoded ids without special tokens, cut at the first
    newline (``stop_at_newline``) and at the first stop string."""
    text = tokenizer.decode(list(ids), skip_special_tokens=True)
    stops = (["\n"] if config.stop_at_newline else []) + list(config.stop_strings)
    for stop in stops:
        text = text.split(stop, 1)[0]
    return text.strip()


def _decode(model, tokenizer, rows: list[DecodeRow], config, generator, device) -> None:
    """The token loop (fills each row's ids, log-probs and allowed ids in place)."""
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos_id = tokenizer.eos_token_id
    stops = stop_token_ids(tokenizer, config.stop_at_newline, config.stop_strings)
    images = [row.image for row in rows] if any(row.image is not None for row in rows) else None
    logits, cache, attention, next_position = prefill(model, [row.prompt_ids for row in rows], pad_id, device, images)
    live = list(range(len(rows)))  # batch row -> index into rows

    for _ in range(max(row.limit for row in rows)):
        tokens = torch.full((len(live),), pad_id, dtype=torch.long, device=device)
        sample_constrained(rows, live, logits, tokens, config, generator)
        sample_free(rows, live, logits, tokens, config, generator, eos_id, stops)

        keep = [position for position, index in enumerate(live) if not rows[index].done]
        if not keep:
            break
        if len(keep) < len(live):
            keep_index = torch.tensor(keep, dtype=torch.long, device=device)
            cache.batch_select_indices(keep_index)
            attention, next_position, tokens = attention[keep_index], next_position[keep_index], tokens[keep_index]
            live = [live[position] for position in keep]
        attention = torch.cat([attention, attention.new_ones((len(live), 1))], dim=1)
        cache, logits = decode_step(model, tokens, attention, next_position, cache)
        next_position = next_position + 1


def generate_text(
    policy: Policy,
    prompts: Sequence[str],
    max_new_tokens: int = 256,
    *,
    stop_at_newline: bool = False,
    max_length: int | None = None,
) -> list[str]:
    """Free-text greedy generation, e.g. the analyzer's JSON (a sampled one is ``generate``
    with a ``SamplingConfig``).

    Args:
        policy: A ``model.Policy``.
        prompts: Prompt texts.
        max_new_tokens: Longest response.
        stop_at_newline: Stop at the first newline (off: JSON may span lines).
        max_length: Prompt + response budget (None: the model's maximum).

    Returns:
        One response text per prompt.
    """
    config = SamplingConfig(
        max_new_tokens=max_new_tokens,
        temperature=0.0,
        constrained=False,
        stop_at_newline=stop_at_newline,
        max_length=max_length,
    )
    generations = generate(policy, prompts, config=config, generator=torch.Generator())
    return [generation.text for generation in generations]

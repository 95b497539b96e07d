"""Supervised fine-tuning in the multi-turn layout: whole-episode sequences with an
action-token mask (the layout of ``hindsight.policy.episode_context``).

A policy rolled out with ``rollout.layout: multiturn`` reads, after turn 0, one growing token
sequence per episode (``policy.episode_context``: header, then per turn an observation
segment and the action ids + EOS). Behaviour cloning on step-wise prompts never shows it
such a sequence; here the expert episodes are replayed through the engine's own
``EpisodeContext`` (the same header and segment texts, each tokenized on its own, the
action ids appended, the same truncation rule) and trained on as one sequence per episode,
the loss on the action ids + EOS of every turn.

The examples table stays text, one row per expert step, so the datasets remain readable
and versioned (parquet) and the tokenizer can be trained on them before any token id exists
(the embedded policy's BPE tokenizer is trained on the behaviour-cloning examples):

    sequence       "bc/<episode_id>" (or "skill_bc/<episode_id>"): the rows of one sequence
    step           the turn's position in its episode
    header         the episode's first lines (task line; skill block for skill_bc)
    prompt         the turn's observation segment (``episode_context.segment_text``)
    response       the expert action (its ids + EOS are the turn's action ids)
    valid_actions  the turn's valid actions (they size the response room, as in the engine)

Token ids are built inside the SFT loop (``encode_examples``), with the policy's tokenizer.
When a context passes ``max_length`` the engine drops its oldest turns and re-reads it: each
such truncation chain (``episode_batches.episode_chains``) is one ``EpisodeSequence``, and a
turn is trained in exactly the context the engine would show it. A (prompt, response) row
(``header`` null: analyzer pairs, step-wise examples) is encoded as before.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Sequence

import pandas as pd
import torch

from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import StepSample, encode_response, encode_sample
from hindsight.policy.episode_context import EpisodeContext, encode_text, header_text, segment_text
from hindsight.policy.prompts import PromptConfig
from hindsight.policy.skill_injection import inject_skill
from hindsight.training.episode_batches import chain_logprobs, episode_chains

logger = logging.getLogger(__name__)

MULTITURN_COLUMNS = ("sequence", "step", "header", "valid_actions")
"""The columns a multi-turn example row adds to (prompt, response, kind)."""


@dataclass(frozen=True)
class TurnBudget:
    """How much context a turn may hold: the engine's rule (``cached_generation.begin_turns``),
    from the shared rollout settings (``TurnBudget.of(project.rollout.sampling)``)."""

    max_length: int = 1024
    """Context + response tokens (``rollout.sampling.max_length``)."""
    max_new_tokens: int = 24
    """Response room under free generation (``rollout.sampling.max_new_tokens``)."""
    constrained: bool = True
    """Constrained decoding: the response room is the longest valid action + EOS."""

    @classmethod
    def of(cls, rollout) -> "TurnBudget":
        """The budget of a rollout's decoding (``SamplingConfig``: ``RolloutConfig.sampling``)."""
        return cls(
            max_length=int(rollout.max_length), max_new_tokens=int(rollout.max_new_tokens), constrained=bool(rollout.constrained)
        )

    def context_budget(self, tokenizer, valid_actions: Sequence[str]) -> int:
        """Tokens the context may hold before the turn's action: ``max_length`` minus the
        trie depth of the valid actions (constrained, some actions) or ``max_new_tokens``."""
        actions = [str(action) for action in valid_actions] if valid_actions is not None else []
        limit = ActionTrie.from_actions(tokenizer, actions).depth if self.constrained and actions else self.max_new_tokens
        if self.max_length - limit < 1:
            raise ValueError(f"multi-turn SFT: max_length={self.max_length} leaves no room for the context (response {limit}).")
        return self.max_length - limit


@dataclass
class EpisodeSequence:
    """One training sequence of the multi-turn layout: a truncation chain of one episode,
    its turns as step samples (each one's ``input_ids`` a prefix of the next one's prompt)."""

    samples: list[StepSample]
    """The chain's turns, in order; the last one's ``input_ids`` hold the whole sequence."""

    @property
    def input_ids(self) -> list[int]:
        """The sequence's ids (header, segments, action ids + EOS)."""
        return self.samples[-1].input_ids

    @property
    def loss_tokens(self) -> int:
        """How many tokens carry the loss (every turn's action ids + EOS)."""
        return sum(len(sample.response_ids) for sample in self.samples)

    @property
    def loss_mask(self) -> list[int]:
        """1 on the action ids + EOS of every turn, 0 elsewhere (``len(input_ids)`` entries)."""
        mask = [0] * len(self.input_ids)
        for sample in self.samples:
            start = len(sample.prompt_ids)
            mask[start : start + len(sample.response_ids)] = [1] * len(sample.response_ids)
        return mask


def multiturn_examples(episodes: pd.DataFrame, config: PromptConfig, kind: str = "bc") -> pd.DataFrame:
    """Example rows of the multi-turn layout, one per step (module docstring).

    Args:
        episodes: Trajectory rows (task, observation, action, response, valid_actions,
            identity columns), each episode's steps in order.
        config: How the engine writes the header and a segment (``rollout.prompt``).
        kind: The examples' family; the sequence key is ``"<kind>/<episode_id>"``.

    Returns:
        Columns episode_id, group_id, task_type, step, prompt, response, kind and
        ``MULTITURN_COLUMNS``.
    """
    rows = []
    for episode_id, episode in episodes.groupby("episode_id", sort=False):
        header = header_text(episode["task"].iloc[0], None, config)
        for _, row in episode.iterrows():
            valid = [str(action) for action in row["valid_actions"]]
            rows.append(
                {
                    "episode_id": episode_id,
                    "group_id": row["group_id"],
                    "task_type": row["task_type"],
                    "step": int(row["step"]),
                    "prompt": segment_text(row["observation"], valid, config),
                    "response": row["response"] or row["action"],
                    "kind": kind,
                    "sequence": f"{kind}/{episode_id}",
                    "header": header,
                    "valid_actions": valid,
                }
            )
    return pd.DataFrame(rows)


def is_multiturn_row(examples: pd.DataFrame) -> pd.Series:
    """Per row: whether it belongs to a multi-turn sequence (a ``header`` is set)."""
    if "header" not in examples:
        return pd.Series(False, index=examples.index)
    return examples["header"].notna()


def skill_conditioned(examples: pd.DataFrame, skill_of: dict[str, str]) -> pd.DataFrame:
    """Skill-conditioned behaviour cloning: the rows of the episodes that have a skill, the
    skill injected where the engine puts it (the header of a multi-turn sequence, which
    becomes a sequence of its own; the prompt of a step-wise example), kind "skill_bc"."""
    conditioned = examples[examples["episode_id"].astype(str).isin(skill_of)].copy()
    skills = [skill_of[str(episode)] for episode in conditioned["episode_id"]]
    multiturn = is_multiturn_row(conditioned)
    if multiturn.any():
        conditioned.loc[multiturn, "header"] = [
            inject_skill(text, skill) for text, skill, on in zip(conditioned["header"], skills, multiturn) if on
        ]
        conditioned.loc[multiturn, "sequence"] = [
            f"skill_bc/{episode}" for episode, on in zip(conditioned["episode_id"], multiturn) if on
        ]
    if not multiturn.all():
        conditioned.loc[~multiturn, "prompt"] = [
            inject_skill(text, skill) for text, skill, on in zip(conditioned["prompt"], skills, multiturn) if not on
        ]
    conditioned["kind"] = "skill_bc"
    return conditioned


def replay_turns(
    tokenizer,
    header: str,
    segments: Sequence[str],
    responses: Sequence[str],
    valid_actions: Sequence[Sequence[str]],
    budget: TurnBudget,
    sequence: str = "",
    steps: Sequence[int] | None = None,
) -> list[StepSample]:
    """Play an episode's turns into an ``EpisodeContext`` as the engine does: per turn the
    segment's ids (truncated to the turn's budget), then the action ids + EOS.

    Returns:
        One step sample per turn: ``prompt_ids`` the context the engine would read,
        ``response_ids`` the action ids + EOS, ``header_length`` and ``truncated_tokens``
        as the engine records them, ``episode_id`` = ``sequence``.
    """
    context = EpisodeContext.from_header(tokenizer, header)
    steps = list(range(len(segments))) if steps is None else list(steps)
    samples = []
    for step, segment, response, actions in zip(steps, segments, responses, valid_actions):
        context.begin_turn(encode_text(tokenizer, segment), budget.context_budget(tokenizer, actions))
        response_ids = encode_response(tokenizer, response)
        samples.append(
            StepSample(
                episode_id=sequence, step=int(step), prompt_ids=list(context.ids), response_ids=response_ids,
                truncated_tokens=context.dropped_tokens, max_length=budget.max_length, header_length=context.header_length,
            )
        )
        context.end_turn(response_ids)
    return samples


def episode_sequences(tokenizer, rows: pd.DataFrame, budget: TurnBudget) -> list[EpisodeSequence]:
    """The training sequences of multi-turn example rows: one per truncation chain of each
    ``sequence`` (turns in ``step`` order); every chain gets its own sample ``episode_id``
    (``"<sequence>#<chain>"``) so a batch never joins two of them."""
    out = []
    for key, turns in rows.groupby("sequence", sort=False):
        turns = turns.sort_values("step", kind="stable")
        samples = replay_turns(
            tokenizer, turns["header"].iloc[0], turns["prompt"].tolist(), turns["response"].tolist(),
            turns["valid_actions"].tolist(), budget, str(key), turns["step"].astype(int).tolist(),
        )
        for number, chain in enumerate(episode_chains(samples)):
            out.append(EpisodeSequence([dataclasses.replace(samples[i], episode_id=f"{key}#{number}") for i in chain]))
    return out


def encode_examples(
    tokenizer, examples: pd.DataFrame, max_length: int, budget: TurnBudget | None, images: Sequence | None = None
) -> list[StepSample | EpisodeSequence]:
    """The SFT units of an examples table: a ``StepSample`` per (prompt, response) row
    (``encode_sample``, ``max_length``; with ``images``, one ``ScreenImage`` or None per row
    of ``examples``: a vision policy's screenshots), then an ``EpisodeSequence`` per
    multi-turn chain.

    Raises:
        ValueError: Multi-turn rows and no ``budget`` (the rollout settings decide it), or
            multi-turn rows with screenshots (vision policies play step-wise prompts).
    """
    multiturn = is_multiturn_row(examples)
    pairs = examples[~multiturn]
    if images is None:
        units: list[StepSample | EpisodeSequence] = [
            encode_sample(tokenizer, prompt, response, max_length=max_length)
            for prompt, response in zip(pairs["prompt"], pairs["response"])
        ]
    else:
        if multiturn.any():
            raise ValueError("SFT: multi-turn examples take no screenshots (vision policies play step-wise prompts)")
        units = [
            encode_sample(tokenizer, prompt, response, max_length=max_length, image=image)
            for prompt, response, image in zip(pairs["prompt"], pairs["response"], images, strict=True)
        ]
    if multiturn.any():
        if budget is None:
            raise ValueError(
                "SFT got multi-turn examples (a 'header' column) but no TurnBudget: pass TurnBudget.of(project.rollout.sampling)"
            )
        sequences = episode_sequences(tokenizer, examples[multiturn], budget)
        logger.info("multi-turn SFT: %d steps as %d sequences", int(multiturn.sum()), len(sequences))
        units += sequences
    return units


def sequence_nll(
    model, sequences: Sequence[EpisodeSequence], pad_token_id: int, pad_to_multiple_of: int | None = None
) -> tuple[torch.Tensor, int]:
    """Token-mean negative log-likelihood of the masked tokens (every turn's action ids +
    EOS) of the sequences, one forward pass per sequence (``episode_batches.chain_logprobs``:
    only the positions before action tokens reach the LM head), and their count."""
    samples = [sample for sequence in sequences for sample in sequence.samples]
    logp = torch.cat(chain_logprobs(model, samples, pad_token_id, pad_to_multiple_of))
    count = int(logp.numel())
    return -logp.sum() / max(count, 1), count

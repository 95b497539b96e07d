"""Step samples as the trainers and the scorer see them: a prompt and the response tokens
that were sampled for it, with the decoding restriction that was in force.

The same sample can be re-scored under another prompt (the skill-augmented one) without
touching its response tokens or their allowed-token sets: ``with_prompt`` swaps the prompt
only, which is what makes the plain and the skill-augmented log-probs describe the same
tokens under the same decoding rule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import EncodedSample, TokenBatch, collate, encode_ids, encode_prompt, encode_response
from hindsight.policy.prompts import PromptConfig, episode_prompts


@dataclass
class ResponseSample:
    """One step sample: identity, plain prompt text, and its encoded ids."""

    episode_id: str
    group_id: str
    step: int
    prompt: str
    """The plain (skill-free) prompt text."""
    encoded: EncodedSample
    """Prompt ids (possibly truncated), response ids, allowed ids per response token."""
    max_length: int = 1024
    """Token limit used when re-encoding under another prompt."""

    @property
    def response_ids(self) -> list[int]:
        return self.encoded.response_ids

    def with_prompt(self, tokenizer, prompt: str) -> "ResponseSample":
        """The same response tokens and restriction under another prompt text."""
        encoded = encode_ids(
            encode_prompt(tokenizer, prompt), self.encoded.response_ids, self.max_length, self.encoded.allowed_ids
        )
        return dataclasses.replace(self, prompt=prompt, encoded=encoded)


@dataclass
class ResponseBatch:
    """A collated batch plus the width of its right-aligned response block."""

    tokens: TokenBatch
    response_width: int


def collate_responses(samples: Sequence[ResponseSample], pad_token_id: int) -> ResponseBatch:
    """Left-pad samples; responses end at the last column, so ``[:, -response_width:]`` of
    any [B, L] tensor holds every sample's response right-aligned."""
    tokens = collate([sample.encoded for sample in samples], pad_token_id)
    return ResponseBatch(tokens=tokens, response_width=max(len(s.response_ids) for s in samples))


def samples_from_table(
    table: pd.DataFrame,
    tokenizer,
    prompt_config: PromptConfig,
    *,
    constrained: bool = True,
    max_length: int = 1024,
) -> list[ResponseSample]:
    """Rebuild the step samples of a trajectory table (prompts from the episode history).

    The response is the table's ``response`` text re-tokenized; under constrained decoding
    the allowed ids come from the trie of that step's valid actions (the same trie the
    actor sampled from), and a response that is not a valid action gets no restriction.

    Returns:
        The samples, in the table's (episode, step) order.
    """
    samples = []
    for episode_id, episode in table.sort_values(["episode_id", "step"]).groupby("episode_id", sort=False):
        prompts = episode_prompts(
            episode["task"].iloc[0],
            episode["observation"].tolist(),
            episode["action"].tolist(),
            episode["valid_actions"].tolist(),
            prompt_config,
        )
        for (_, row), prompt in zip(episode.iterrows(), prompts):
            response = row["response"] or row["action"]
            response_ids = encode_response(tokenizer, response)
            allowed = None
            valid = list(row["valid_actions"])
            if constrained and response in valid:
                allowed = ActionTrie.from_actions(tokenizer, valid).allowed_along(response_ids)
            encoded = encode_ids(encode_prompt(tokenizer, prompt), response_ids, max_length, allowed)
            samples.append(
                ResponseSample(
                    episode_id=str(episode_id),
                    group_id=str(row["group_id"]),
                    step=int(row["step"]),
                    prompt=prompt,
                    encoded=encoded,
                    max_length=max_length,
                )
            )
    return samples


def samples_from_rollout(step_samples: Sequence, max_length: int | None = 1024) -> list[ResponseSample]:
    """Wrap the rollout engine's step samples: the exact prompt ids the actor read, the
    sampled response ids and their allowed-id sets (no re-tokenization)."""
    limit = int(max_length or 1_000_000)
    return [
        ResponseSample(
            episode_id=sample.episode_id,
            group_id=sample.group_id,
            step=int(sample.step),
            prompt=sample.prompt,
            encoded=sample.encoded(limit),
            max_length=limit,
        )
        for sample in step_samples
    ]

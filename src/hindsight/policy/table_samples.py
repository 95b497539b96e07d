"""Step samples rebuilt from a trajectory table (``samples_from_table``): the prompts from
each episode's history, the responses re-tokenized, the allowed ids from each step's valid
actions; what the scoring pipeline and the positive replay score (``encoding.StepSample``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import StepSample, encode_ids, encode_prompt, encode_response
from hindsight.policy.prompts import PromptConfig, episode_prompts

if TYPE_CHECKING:
    import pandas as pd


def samples_from_table(
    table: pd.DataFrame,
    tokenizer,
    prompt_config: PromptConfig,
    *,
    constrained: bool = True,
    max_length: int = 1024,
) -> list[StepSample]:
    """Rebuild the step samples of a trajectory table (prompts from the episode history).

    The response is the table's ``response`` text re-tokenized; under constrained decoding
    the allowed ids come from the trie of that step's valid actions (the same trie the
    actor sampled from), and a response that is not a valid action gets no restriction.
    No behaviour log-probs (``old_logprobs`` is None).

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
                dataclasses.replace(
                    encoded, episode_id=str(episode_id), group_id=str(row["group_id"]), step=int(row["step"]), prompt=prompt
                )
            )
    return samples

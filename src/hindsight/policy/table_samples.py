"""Step samples rebuilt from a trajectory table (``samples_from_table``): the prompts from
each episode's history, the responses re-tokenized, the allowed ids from each step's valid
actions; what the scoring pipeline and the positive replay score (``encoding.StepSample``).

A trajectory table keeps no screenshots (they live in a table of their own, keyed by episode
and step, and only for the steps ingestion wrote), so these samples are text only: a policy
that sees would be scored on them without its screen. ``refuse_policy_that_sees`` is what
every caller runs first; it names the place and what to change."""

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


def refuse_policy_that_sees(policy, where: str, remedy: str) -> None:
    """Stop before step samples are rebuilt from a trajectory table for a policy that sees
    (``policy.vision`` set): they would carry no screen (module docstring).

    Args:
        policy: The policy that would score or train on the rebuilt samples.
        where: What rebuilds them (a pipeline, a setting), first in the message.
        remedy: What to change, last in the message.

    Raises:
        ValueError: ``policy`` sees.
    """
    if getattr(policy, "vision", None) is not None:
        raise ValueError(
            f"{where} rebuilds step samples from a trajectory table, which holds no screenshots: a policy that sees "
            f"would be scored there without its screen; {remedy}"
        )

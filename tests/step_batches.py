"""Rollout batches of constrained step samples built from gold examples, for the tests of
one RL update (imported by the test modules)."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import pandas as pd
import torch

from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import encode_ids, encode_prompt, encode_response
from hindsight.training.batch import RolloutBatch
from hindsight.training.distillation import response_logprobs


def gold_step_batch(policy, examples: Sequence[dict], advantages: Sequence[float]) -> RolloutBatch:
    """One constrained step sample per advantage, from the first gold examples, with their
    recorded log-probs under ``policy``."""
    tokenizer = policy.tokenizer
    samples = []
    for number, example in enumerate(examples[: len(advantages)]):
        response = encode_response(tokenizer, example["response"])
        allowed = ActionTrie.from_actions(tokenizer, example["valid_actions"]).allowed_along(response)
        encoded = encode_ids(encode_prompt(tokenizer, example["prompt"]), response, 768, allowed)
        samples.append(dataclasses.replace(encoded, episode_id=f"e{number}", group_id="g", step=0, prompt=example["prompt"]))
    old = response_logprobs(policy.model, samples, 8, tokenizer.pad_token_id)
    return RolloutBatch(
        table=pd.DataFrame(), samples=samples, played=pd.DataFrame(), old_logp=old,
        teacher_logp=[None] * len(samples), advantages=torch.tensor(list(advantages)),
    )

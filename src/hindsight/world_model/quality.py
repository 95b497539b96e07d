"""How good a world model is on held-out transitions: next-observation exact match (greedy
generation, the way the world-model environment queries it) and token accuracy (teacher
forced: the share of response tokens, EOS included, that are the model's argmax).

Reported overall and separately for terminal examples (the response is ``SOLVED_MARKER`` or
``FAILED_MARKER``: how well the model judges outcomes; each marker also on its own) and
ordinary transitions, and per action type (the first
word of the action played: ``click``, ``type``, ``press`` on a web page; the verb in a text
game) with a softer score beside exact match: the line score, the F1 of the predicted and true
observations' lines (``observation_lines``: a page view's element lines, ``[ref] TAG ...``,
which the one-line format keeps apart by their ``[ref]``; a text game's observation is one
line, so there the line score is exact match).
"""

from __future__ import annotations

import math
import re
from collections import Counter

import pandas as pd
import torch

from hindsight.policy import Policy
from hindsight.policy.encoding import collate, encode_sample
from hindsight.policy.logprobs import response_logits
from hindsight.policy.generation import generate_text
from hindsight.world_model.transitions import FAILED_MARKER, SOLVED_MARKER

QUALITY_COLUMNS = [
    "episode_id", "step", "task_type", "action_type", "terminal", "response", "predicted", "exact_match", "line_score", "token_accuracy",
]
LINE_START = re.compile(r" (?=\[-?\d+\] )")
"""Where a new line of a page view starts in its one-line form (before ``[ref] ``)."""


def observation_lines(observation: str) -> list[str]:
    """The lines of an observation in the world model's one-line format: a page view's
    instruction and element lines (split before each ``[ref] ``), else the whole text."""
    return [line for line in LINE_START.split(observation.strip()) if line]


def line_score(predicted: str, response: str) -> float:
    """F1 of the predicted and true lines (multisets; ``observation_lines``): 1 when every line
    is right, partial credit for the lines a prediction gets right; 1 for two empty texts."""
    truth, guess = Counter(observation_lines(response)), Counter(observation_lines(predicted))
    total = sum(truth.values()) + sum(guess.values())
    return 1.0 if total == 0 else 2 * sum((truth & guess).values()) / total


def action_type(prompt: str) -> str:
    """The first word of the last action in a world-model prompt (``Action: click [5]`` ->
    ``click``; ``none`` when the prompt names none)."""
    actions = [line[len("Action: "):] for line in prompt.splitlines() if line.startswith("Action: ")]
    words = actions[-1].split() if actions else []
    return re.sub(r"[^a-z0-9_.-]", "_", words[0].lower()) if words else "none"


@torch.no_grad()
def token_accuracies(world_model: Policy, prompts: list[str], responses: list[str], *, max_length: int, batch_size: int = 16) -> list[float]:
    """Per example, the share of its response tokens that are the model's argmax prediction."""
    model, tokenizer = world_model.model, world_model.tokenizer
    device = next(model.parameters()).device
    model.eval()
    out = []
    for start in range(0, len(prompts), batch_size):
        samples = [
            encode_sample(tokenizer, prompt, response, max_length=max_length)
            for prompt, response in zip(prompts[start : start + batch_size], responses[start : start + batch_size])
        ]
        batch = collate(samples, pad_token_id=tokenizer.pad_token_id).to(device)
        logits, span = response_logits(model, batch)
        hits = (logits.argmax(-1) == batch.input_ids[:, -span:]) & batch.response_mask[:, -span:].bool()
        counts = batch.response_mask[:, -span:].sum(-1).clamp(min=1)
        out.extend((hits.sum(-1).float() / counts).cpu().tolist())
    return out


def heldout_quality(
    world_model: Policy, examples: pd.DataFrame, *, max_new_tokens: int, max_length: int, max_examples: int
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Score the world model on (at most ``max_examples`` of) the held-out examples.

    Args:
        world_model: A ``policy.model.Policy``.
        examples: The example table (``transitions.transition_examples``).
        max_new_tokens: Longest generated observation.
        max_length: Prompt + response token budget.
        max_examples: Most held-out examples scored (a fixed-seed draw; generation is the
            costly part).

    Returns:
        (one row per scored example, ``QUALITY_COLUMNS``; metrics ``world_model/heldout_*``,
        NaN when there is no held-out example; per action type
        ``world_model/heldout_exact_match/<type>`` and ``world_model/heldout_line_score/<type>``).
    """
    heldout = examples[examples["heldout"]]
    # a fixed-seed draw over all held-out episodes (ids sort by source: the first N would be one source)
    heldout = heldout.sample(n=min(max_examples, len(heldout)), random_state=0).sort_values(["episode_id", "step"])
    if heldout.empty:
        nan = float("nan")
        return pd.DataFrame(columns=QUALITY_COLUMNS), {
            "world_model/heldout_examples": 0.0, "world_model/heldout_exact_match": nan, "world_model/heldout_token_accuracy": nan,
            "world_model/heldout_line_score": nan,
            "world_model/heldout_terminal_exact_match": nan, "world_model/heldout_transition_exact_match": nan,
            "world_model/heldout_solved_exact_match": nan, "world_model/heldout_failed_exact_match": nan,
        }
    prompts, responses = heldout["prompt"].tolist(), heldout["response"].tolist()
    predicted = [
        text.strip()
        for text in generate_text(world_model, prompts, max_new_tokens=max_new_tokens, stop_at_newline=True, max_length=max_length)
    ]
    table = heldout[["episode_id", "step", "task_type", "terminal", "response"]].assign(
        action_type=[action_type(prompt) for prompt in prompts],
        predicted=predicted,
        exact_match=[p == r.strip() for p, r in zip(predicted, responses)],
        line_score=[line_score(p, r) for p, r in zip(predicted, responses)],
        token_accuracy=token_accuracies(world_model, prompts, responses, max_length=max_length),
    )[QUALITY_COLUMNS].reset_index(drop=True)
    metrics = {
        "world_model/heldout_examples": float(len(table)),
        "world_model/heldout_exact_match": float(table["exact_match"].mean()),
        "world_model/heldout_token_accuracy": float(table["token_accuracy"].mean()),
        "world_model/heldout_line_score": float(table["line_score"].mean()),
    }
    for kind, part in table.groupby("action_type"):
        metrics[f"world_model/heldout_exact_match/{kind}"] = float(part["exact_match"].mean())
        metrics[f"world_model/heldout_line_score/{kind}"] = float(part["line_score"].mean())
    responses = table["response"].str.strip()
    parts = (
        ("terminal", table[table["terminal"]]), ("transition", table[~table["terminal"]]),
        ("solved", table[responses == SOLVED_MARKER]), ("failed", table[responses == FAILED_MARKER]),
    )
    for name, part in parts:
        metrics[f"world_model/heldout_{name}_exact_match"] = float(part["exact_match"].mean()) if len(part) else math.nan
    return table, metrics

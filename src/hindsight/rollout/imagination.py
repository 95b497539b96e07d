"""Thinking with the world model inside one response (WM-R1): the rollout engine's optional
``Imagination`` component.

WM-R1 embeds the world model in the agent's reasoning. Our reading (the official code makes
each call an imaginary turn of its own, a new message, capped per episode; methods/wmr1.py):
within one turn the policy may call the world model on a candidate action, read the predicted
observation in its own context and go on, up to a bound per step; then it commits an action. The engine does this when its
``RolloutConfig.imagination`` is set, in ANY environment (the world-model environment during
WM-R1 training, the real game at evaluation): the environment only ever sees committed
actions, and the world model is asked about the episode's current state (its task, history
and observation, as the engine holds them).

One step, constrained decoding (``generate_with_imagination``):

1. The policy decodes over the valid actions plus ``imagine: <a>`` for each valid ``a``
   (``IMAGINE_PREFIX``) while the step has calls left and the context has room for one more
   call (its answer and the committed action after it); else over the valid actions only.
2. It chose ``imagine: a``: the world model predicts the observation after ``a``
   (``WorldModelSimulator.predict_transition``), the text ``PREDICTION_LAYOUT`` of it is
   tokenized with the policy's tokenizer and appended to the response as FORCED tokens
   (allowed ids ``[[id]]``, behaviour log-prob 0), and decoding goes on from prompt + response
   so far (another generation call with the longer context, all live episodes batched).
3. It chose a valid action: the response ends; the engine plays that action.

The step's sample holds one response with every segment: the chosen ``imagine: a`` tokens
(and their EOS), the inserted prediction, ..., the committed action and its EOS. A forced
position has one allowed id, so its restricted log-prob is exactly 0 with zero gradient,
its PPO ratio is exactly 1 and it is left out of loss denominators
(``StepSample.choice_positions``): the world model's tokens are masked from the loss, as
the paper does. The learner, reading the same ids and allowed sets, recomputes the
behaviour log-probs the generation recorded.

Our reading where the paper and the official code leave it open: the marker layout
``"\\n=> <prediction>\\n"``; the imagined segment keeps the EOS its trie path ends with (the
decoder stops there; the EOS stays in the context the policy continues from); a prediction
is cut to the room the context has left. Free (unconstrained) generation and the multi-turn
layout are refused (``check_imagination``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import torch

from hindsight.policy import Policy
from hindsight.policy.encoding import StepSample, encode_prompt
from hindsight.policy.generation import Generation, SamplingConfig, generate
from hindsight.world_model.environment import IMAGINE_PREFIX, WorldModelSimulator

if TYPE_CHECKING:
    from hindsight.rollout.live_episode import Episode

PREDICTION_LAYOUT = "\n=> {}\n"
"""How a world-model prediction is inserted into the policy's response."""
CALLS_COLUMN = "imagination_calls"
"""The rollout table's column of in-response world-model calls per step (only with imagination)."""


@dataclass(eq=False)
class Imagination:
    """The world model the policy may consult inside a response, and the bound per step."""

    simulator: WorldModelSimulator
    """Predicts observations (``predict_transition``); counts every call in ``simulator.calls``."""
    calls_per_step: int = 5
    """Most world-model calls inside one step's response (5, as WM-R1's official ``n_wm_max``,
    which caps a whole episode's calls)."""
    calls: int = field(default=0, repr=False)
    """In-response calls so far (all rollouts with this object)."""

    def __post_init__(self) -> None:
        if self.calls_per_step < 1:
            raise ValueError(f"Imagination.calls_per_step must be >= 1 (leave imagination unset for none), got {self.calls_per_step}")

    def predict(self, episode: "Episode", action: str) -> str:
        """The world model's observation after ``action`` in the episode's current state."""
        self.calls += 1
        return self.simulator.predict_transition(episode.task_text, episode.history, episode.observation, action)


def check_imagination(imagination: Imagination | None, constrained: bool, layout: str) -> None:
    """Refuse the settings imagination does not support, naming the key to change."""
    if imagination is None:
        return
    if not constrained:
        raise ValueError(
            "imagination (in-response world-model calls) needs constrained decoding: set rollout.sampling.constrained: true, "
            "or think in imaginary turns instead (training.rl.methods.wmr1.thinking: imaginary_turn)"
        )
    if layout != "stepwise":
        raise ValueError("imagination works in the stepwise layout only: set rollout.layout: stepwise")


@dataclass
class _Response:
    """One step's response being assembled over the rounds."""

    prompt: str
    prompt_ids: list[int] = field(default_factory=list)
    truncated: int = 0
    ids: list[int] = field(default_factory=list)
    allowed: list[list[int]] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    calls: int = 0
    result: Generation | None = None


def _longest_option(tokenizer, actions: Sequence[str]) -> int:
    """Tokens of the longest option, its EOS included (the decoder's response budget)."""
    return max(len(tokenizer(action, add_special_tokens=False)["input_ids"]) for action in actions) + 1


def _options(policy: Policy, episode: "Episode", state: _Response, imagination: Imagination, max_length: int) -> list[str]:
    """The valid actions, plus the ``imagine:`` ones while calls and room are left."""
    valid = episode.valid_actions
    if not valid or state.calls >= imagination.calls_per_step:
        return valid
    imagined = [IMAGINE_PREFIX + action for action in valid]
    used = len(state.prompt_ids) + len(state.ids)
    room = max_length - used - _longest_option(policy.tokenizer, imagined) - _longest_option(policy.tokenizer, valid)
    return valid + imagined if room > len(policy.tokenizer(PREDICTION_LAYOUT.format(""), add_special_tokens=False)["input_ids"]) else valid


def _insert_prediction(policy: Policy, episode: "Episode", state: _Response, asked: str, imagination: Imagination, max_length: int) -> None:
    """Ask the world model, append its prediction as forced tokens (cut to the room left)."""
    predicted = imagination.predict(episode, asked)
    ids = policy.tokenizer(PREDICTION_LAYOUT.format(predicted), add_special_tokens=False)["input_ids"]
    room = max_length - len(state.prompt_ids) - len(state.ids) - _longest_option(policy.tokenizer, episode.valid_actions)
    ids = ids[: max(room, 0)]
    state.ids += ids
    state.allowed += [[int(token)] for token in ids]
    state.logprobs += [0.0] * len(ids)
    state.calls += 1


def _finish(state: _Response, generation: Generation, sampling: SamplingConfig) -> Generation:
    sample = StepSample(
        prompt=state.prompt, prompt_ids=state.prompt_ids, response_ids=state.ids, allowed_ids=state.allowed,
        old_logprobs=torch.tensor(state.logprobs, dtype=torch.float32), truncated_tokens=state.truncated,
        max_length=sampling.max_length,
    )
    return Generation(sample=sample, text=generation.text, finished=generation.finished)


def generate_with_imagination(
    policy: Policy, episodes: Sequence["Episode"], sampling: SamplingConfig, generator: torch.Generator, imagination: Imagination
) -> tuple[list[Generation], list[int]]:
    """One step of every episode with in-response world-model calls (module docstring).

    Returns:
        (one ``Generation`` per episode, whose text is the committed action and whose sample
        holds the whole response; the in-response calls of each episode's step).
    """
    model_config = getattr(policy.model, "config", None)
    max_length = sampling.max_length or int(getattr(model_config, "max_position_embeddings", 2048))
    states = [_Response(prompt=episode.prompt()) for episode in episodes]
    for state in states:
        state.prompt_ids = encode_prompt(policy.tokenizer, state.prompt)  # cut by generate in the first round
    pending, first = list(range(len(episodes))), True
    while pending:
        options = [_options(policy, episodes[i], states[i], imagination, max_length) or None for i in pending]
        ids = [states[i].prompt_ids + states[i].ids for i in pending]
        generations = generate(policy, config=sampling, valid_actions=options, generator=generator, prompt_ids=ids)
        still = []
        for i, generation, offered in zip(pending, generations, options):
            state, sample = states[i], generation.sample
            if first:
                state.prompt_ids, state.truncated = list(sample.prompt_ids), sample.truncated_tokens
            elif sample.truncated_tokens:
                raise RuntimeError("imagination: a continuation was truncated although the room check passed")
            if offered is None:  # no valid actions: free decoding, no imagination
                state.result = dataclasses.replace(generation, sample=dataclasses.replace(sample, prompt=state.prompt))
                continue
            state.ids += list(sample.response_ids)
            state.allowed += [list(row) for row in sample.allowed_ids]
            state.logprobs += sample.old_logprobs.tolist()
            if generation.text.startswith(IMAGINE_PREFIX) and generation.text in offered:
                _insert_prediction(policy, episodes[i], state, generation.text[len(IMAGINE_PREFIX):], imagination, max_length)
                still.append(i)
            else:
                state.result = _finish(state, generation, sampling)
        pending, first = still, False
    return [state.result for state in states], [state.calls for state in states]

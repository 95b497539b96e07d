"""The policy writes a compact skill under its grammar (``skills.compact``), greedily.

The same constrained decoding as actions (``policy.generation.generate`` with
``valid_actions``: a token trie over the options, the policy's distribution renormalised
over the allowed ids) chooses, for every prompt of a batch:

1. the head among ``["do:", "avoid:"]``;
2. then, for up to ``max_templates`` rounds, one option among the vocabulary's template
   pieces (``" <template> ;"``) and END (the empty option: EOS alone); END is offered from
   the second round on, so a skill has at least one template. Each chosen piece's tokens are
   appended to that row's continuation; rows that chose END stop.

The pieces are the written form the analyzer is trained on (``compact.written_skill`` + EOS),
token for token, so decoding asks the policy exactly the choices its SFT target taught.
Every output is ``skill_target_json(summary, skill)`` built from the choices, so every
analysis parses; the content is the policy's own.

Each prompt is read once and its KV cache kept across the rounds (``policy.choice_rounds``);
only when a continuation could outgrow ``max_length`` does every round call ``generate``
on the whole continuations (which cuts their oldest tokens), as the cache cannot.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import torch

from hindsight.policy import Policy
from hindsight.policy.choice_rounds import ChoiceRounds
from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import encode_prompt
from hindsight.policy.generation import SamplingConfig, generate
from hindsight.skills.compact import (
    MAX_TEMPLATES,
    SKILL_HEADS,
    compact_analysis_prompt,
    compact_skill_json,
    episode_templates,
    outcome_head,
    render_skill,
    template_piece,
)
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.records import SkillRecord, parse_rate, record_from_output
from hindsight.skills.teachers import Teacher

logger = logging.getLogger(__name__)

END_OF_SKILL = ""
"""The END option: no text, so its response is EOS alone."""


def _choose(policy: Policy, prompt_ids: list[list[int]], options: list[list[str]], max_length: int | None) -> list[tuple[str, list[int]]]:
    """Greedy constrained choice among each row's ``options``: (option, its ids without EOS)."""
    config = SamplingConfig(temperature=0.0, constrained=True, max_length=max_length)
    generations = generate(
        policy,
        prompt_ids=prompt_ids,
        config=config,
        valid_actions=options,
        generator=torch.Generator().manual_seed(0),
    )
    return [(generation.text, list(generation.sample.response_ids[:-1])) for generation in generations]


def _round_chooser(
    policy: Policy, prompt_ids: list[list[int]], most_new_tokens: int, max_length: int | None, reuse_cache: bool
) -> Callable[[list[int], list[list[str]]], list[tuple[str, list[int]]]]:
    """``choose(rows, options)``: one greedy constrained choice per row, appended to its
    continuation: over one KV cache per prompt (``ChoiceRounds``) when no continuation can
    outgrow ``max_length`` (and ``reuse_cache``), else one ``generate`` call per round."""
    if reuse_cache and ChoiceRounds.fits([len(ids) for ids in prompt_ids], most_new_tokens, max_length, policy.model):
        return ChoiceRounds(policy, prompt_ids).choose
    continuations = [list(ids) for ids in prompt_ids]

    def choose(rows: list[int], options: list[list[str]]) -> list[tuple[str, list[int]]]:
        chosen = _choose(policy, [continuations[row] for row in rows], options, max_length)
        for row, (_, ids) in zip(rows, chosen):
            continuations[row] = continuations[row] + ids
        return chosen

    return choose


def grammar_skill_outputs(
    policy: Policy,
    prompts: Sequence[str],
    vocabulary: Sequence[str] | Sequence[Sequence[str]],
    max_templates: int = MAX_TEMPLATES,
    max_length: int | None = None,
    heads: Sequence[str] | None = None,
    reuse_cache: bool = True,
) -> list[str]:
    """Greedy analyses under the compact grammar: one parseable JSON text per prompt.

    A template is never chosen twice in a row (the rule teacher folds such repeats, so a
    skill never holds one).

    Args:
        policy: A ``hindsight.policy.Policy``.
        prompts: Analysis prompts (``compact.compact_analysis_prompt``).
        vocabulary: The templates the policy may choose: one list for every prompt
            (``compact.skill_vocabulary``), or one list per prompt (concrete skills:
            ``compact.episode_templates`` of each prompt's episode).
        max_templates: Most templates per skill.
        max_length: Prompt + response token budget (None: the model's maximum).
        heads: Per prompt, the head the episode's outcome calls for ("do:" after a success,
            "avoid:" after a failure, known in hindsight and shown in the prompt); None lets
            the policy choose it.
        reuse_cache: Keep each prompt's KV cache across the rounds (False: one ``generate``
            call per round over the whole continuations; the same choices up to float
            rounding, slower).

    Returns:
        ``skill_target_json(summary, skill)`` texts in prompt order; summary "success" for a
        "do:" skill, "failure" for an "avoid:" one.

    Raises:
        ValueError: A vocabulary is empty, or their number is not the number of prompts, or
            ``max_templates`` is not positive.
    """
    per_row = bool(vocabulary) and not isinstance(vocabulary[0], str)
    rows = [list(v) for v in vocabulary] if per_row else [list(vocabulary)] * len(prompts)
    if per_row and len(rows) != len(prompts):
        raise ValueError(f"grammar analyzer: {len(rows)} vocabularies for {len(prompts)} prompts")
    if not vocabulary or any(not row for row in rows):
        raise ValueError("grammar analyzer: the template vocabulary is empty")
    if max_templates < 1:
        raise ValueError(f"grammar analyzer: max_templates must be positive, got {max_templates}")
    if not prompts:
        return []
    tokenizer = policy.tokenizer
    if heads is not None and (len(heads) != len(prompts) or any(head not in SKILL_HEADS for head in heads)):
        raise ValueError(f"grammar analyzer: heads must be one of {SKILL_HEADS} per prompt, got {list(heads)!r}")
    head_options = [[head] for head in heads] if heads is not None else [list(SKILL_HEADS)] * len(prompts)
    piece_of = [{template_piece(str(t)): str(t) for t in row} for row in rows]
    # the most ids a skill can add: its head, then max_templates of the longest piece (EOS included)
    most_new_tokens = ActionTrie.from_actions(tokenizer, list(SKILL_HEADS)).depth + max_templates * ActionTrie.from_actions(
        tokenizer, sorted({piece for pieces in piece_of for piece in pieces})
    ).depth
    choose = _round_chooser(policy, [encode_prompt(tokenizer, prompt) for prompt in prompts], most_new_tokens, max_length, reuse_cache)
    heads = [head for head, _ in choose(list(range(len(prompts))), head_options)]
    skill_templates: list[list[str]] = [[] for _ in prompts]
    live = list(range(len(prompts)))
    for round_index in range(max_templates):
        if not live:
            break
        end = [END_OF_SKILL] if round_index > 0 else []
        options = [
            [piece for piece, template in piece_of[row].items() if skill_templates[row][-1:] != [template]] + end
            for row in live
        ]
        still_live = []
        for row, (piece, _) in zip(live, choose(live, options)):
            if piece == END_OF_SKILL:
                continue
            skill_templates[row].append(piece_of[row][piece])
            still_live.append(row)
        live = still_live
    return [compact_skill_json(render_skill(head, chosen_templates)) for head, chosen_templates in zip(heads, skill_templates)]


class CompactPolicyTeacher(Teacher):
    """The policy writes compact skills under the grammar: for each episode it asks with the
    compact analysis prompt (the whole episode) and chooses among that episode's own
    templates (``compact.episode_templates``), so every analysis parses."""

    name = "compact_policy"

    def __init__(
        self, policy: Policy, *, concrete: bool = True, max_templates: int = MAX_TEMPLATES, max_length: int | None = None
    ) -> None:
        """Wrap the policy.

        Args:
            policy: A ``hindsight.policy.Policy`` (the current one: on-policy skills).
            concrete: Templates are the episode's actions as played, not abstracted to roles.
            max_templates: Most templates per skill.
            max_length: Prompt + response token budget (None: the model's maximum).
        """
        self.policy = policy
        self.concrete = concrete
        self.max_templates = max_templates
        self.max_length = max_length

    def write_skills(self, episodes: Sequence[EpisodeView]) -> list[SkillRecord]:
        """One greedy grammar-constrained skill per episode (episodes without steps get none).

        Args:
            episodes: Finished episodes.

        Returns:
            One record per episode, in order.
        """
        playable = [episode for episode in episodes if episode.steps]
        outputs = grammar_skill_outputs(
            self.policy,
            [compact_analysis_prompt(episode) for episode in playable],
            [episode_templates(episode, self.concrete) for episode in playable],
            self.max_templates,
            self.max_length,
            heads=[outcome_head(episode.success) for episode in playable],
        ) if playable else []
        output_of = {id(episode): output for episode, output in zip(playable, outputs)}
        records = [record_from_output(episode, output_of.get(id(episode)), self.name) for episode in episodes]
        logger.info("compact policy teacher: %d skills, parse rate %.3f", len(records), parse_rate(records))
        return records

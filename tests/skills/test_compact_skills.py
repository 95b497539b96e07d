"""The compact skill language on real TextWorldExpress episodes (see conftest.recorded_tables):
known skills of gold and failed episodes, the short whole-episode analysis prompt, the written
form's tokenization, and the tiny untrained policy writing skills under the grammar."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.policy.encoding import encode_prompt
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.skills import episodes_from_table, parse_rate, parse_skill_json
from hindsight.skills.compact import (
    MAX_TEMPLATES,
    CompactRuleTeacher,
    compact_analysis_prompt,
    compact_skill,
    concrete_action,
    episode_templates,
    limit_templates,
    outcome_head,
    parse_compact_skill,
    skill_vocabulary,
    template_piece,
    written_skill,
)
from hindsight.skills.compact_decoding import CompactPolicyTeacher, grammar_skill_outputs

pytestmark = pytest.mark.unit

SKILL_TOKEN_LIMIT = 40
"""A compact skill is at most about this many tokens (module docstring of skills.compact)."""
PROMPT_TOKEN_LIMIT = 600


@pytest.fixture(scope="module")
def episodes(recorded_tables):
    table = pd.concat(recorded_tables.values(), ignore_index=True)
    return {episode.episode_id: episode for episode in episodes_from_table(table)}


@pytest.fixture(scope="module")
def skill_tokenizer(gold_steps, episodes):
    """A project-style tokenizer trained on the texts the policy reads and writes, the compact
    analysis prompts and written skills included (the skills repeated, as a set of many
    episodes would hold them)."""
    texts = [text for step in gold_steps for text in (step["prompt"], step["action"])]
    texts += [compact_analysis_prompt(episode) for episode in episodes.values()]
    texts += [written_skill(compact_skill(episode)) for episode in episodes.values()] * 20  # as often as many episodes
    return train_tokenizer(texts, vocab_size=600)


def test_twc_gold_gives_the_workflow_in_order(episodes):
    assert compact_skill(episodes["twc-gold"]) == "do: take <object>; put <object> in <container>"


def test_cookingworld_gold_gives_the_recipe_workflow_in_order(episodes):
    # open + take are repeated for the knife / pepper / flour: the block is kept once
    assert compact_skill(episodes["cooking-gold"]) == (
        "do: read cookbook; open <container>; take <object>; cook <ingredient> in <appliance>; prepare meal; eat meal"
    )


def test_failure_gives_the_first_wrong_action_and_the_loop(episodes):
    # "eat the moon" is the first rejected action; "look around" is played again and again
    assert compact_skill(episodes["twc-failure"]) == "avoid: eat <object>; look around"


def test_long_workflows_keep_their_last_step(episodes):
    stages = [f"stage {index}" for index in range(10)]
    assert limit_templates(stages, 4) == ["stage 0", "stage 1", "stage 2", "stage 9"]
    assert limit_templates(stages[:3], 4) == stages[:3]
    with pytest.raises(ValueError, match="positive"):
        limit_templates(stages, 0)
    assert compact_skill(episodes["cooking-gold"], max_templates=3) == "do: read cookbook; open <container>; eat meal"


def test_the_teacher_goes_through_the_shared_parser(episodes):
    records = CompactRuleTeacher().write_skills(list(episodes.values()))
    assert parse_rate(records) == 1.0
    for record, episode in zip(records, episodes.values()):
        assert record.teacher == "compact_rule"
        assert record.skill == compact_skill(episode)
        assert record.summary == ("success" if episode.success else "failure")
        assert parse_skill_json(record.raw_output) == {"episode_summary": record.summary, "episode_skill": record.skill}


def test_skills_are_short(episodes, skill_tokenizer):
    for episode in episodes.values():
        skill = compact_skill(episode)
        assert len(parse_compact_skill(skill)[1]) <= MAX_TEMPLATES
        assert len(skill_tokenizer(skill)["input_ids"]) <= SKILL_TOKEN_LIMIT


def test_the_analysis_prompt_shows_the_whole_episode_briefly(episodes, recorded_tables, skill_tokenizer, tokenizer):
    prompt = compact_analysis_prompt(episodes["twc-failure"])
    actions = recorded_tables["twc_failure"]["action"].tolist()
    lines = prompt.splitlines()
    assert "episode_success: failure" in lines
    assert [f"{number}. {action}" in lines or f"{number}. {action} +" in lines or f"{number}. {action} !" in lines
            for number, action in enumerate(actions, start=1)] == [True] * len(actions)
    assert "2. take dirty teal dress +" in lines and "3. eat the moon !" in lines
    for episode in episodes.values():
        text = compact_analysis_prompt(episode)
        assert len(skill_tokenizer(text)["input_ids"]) < PROMPT_TOKEN_LIMIT
        assert len(tokenizer(text)["input_ids"]) < PROMPT_TOKEN_LIMIT  # the gold-prompt tokenizer, too


def test_the_written_form_tokenizes_piece_by_piece(episodes, skill_tokenizer, tokenizer):
    for episode in episodes.values():
        skill = compact_skill(episode)
        head, templates = parse_compact_skill(skill)
        written = written_skill(skill)
        assert parse_compact_skill(written) == (head, templates)
        for any_tokenizer in (skill_tokenizer, tokenizer):
            pieces = [head] + [template_piece(template) for template in templates]
            joined = [token for piece in pieces for token in any_tokenizer(piece)["input_ids"]]
            assert any_tokenizer(written)["input_ids"] == joined


def test_the_vocabulary_is_the_sorted_set_of_templates(episodes):
    vocabulary = skill_vocabulary(episodes.values())
    assert vocabulary == sorted(vocabulary) and len(set(vocabulary)) == len(vocabulary)
    assert {"take <object>", "put <object> in <container>", "eat meal", "eat <object>", "look around"} <= set(vocabulary)


def test_the_untrained_policy_writes_parseable_skills_under_the_grammar(episodes, tiny_policy):
    vocabulary = skill_vocabulary(episodes.values())
    prompts = [compact_analysis_prompt(episode) for episode in episodes.values()]
    outputs = grammar_skill_outputs(tiny_policy, prompts, vocabulary, max_templates=3)
    assert len(outputs) == len(prompts)
    for output in outputs:
        fields = parse_skill_json(output)
        assert fields is not None
        head, templates = parse_compact_skill(fields["episode_skill"])
        assert fields["episode_summary"] == ("success" if head == "do:" else "failure")
        assert 1 <= len(templates) <= 3 and set(templates) <= set(vocabulary)
    assert grammar_skill_outputs(tiny_policy, prompts, vocabulary, max_templates=3) == outputs  # greedy


@pytest.mark.parametrize("heads", [False, True])
def test_cached_rounds_choose_what_one_generate_call_per_round_chooses(episodes, tiny_policy, heads):
    chosen = list(episodes.values())
    prompts = [compact_analysis_prompt(episode) for episode in chosen]
    templates = [episode_templates(episode, True) for episode in chosen]
    options = {"heads": [outcome_head(episode.success) for episode in chosen] if heads else None}
    prefills = []
    handle = tiny_policy.model.register_forward_pre_hook(
        lambda module, args, kwargs: prefills.append(kwargs["input_ids"].shape[1] > 1), with_kwargs=True
    )
    try:
        cached = grammar_skill_outputs(tiny_policy, prompts, templates, max_templates=4, **options)
        cached_prefills, prefills[:] = sum(prefills), []
        per_round = grammar_skill_outputs(tiny_policy, prompts, templates, max_templates=4, reuse_cache=False, **options)
        per_round_prefills = sum(prefills)
    finally:
        handle.remove()
    assert cached == per_round
    assert cached_prefills < per_round_prefills / 3  # every prompt read once, not once per round
    # a budget a continuation could outgrow: the per-round calls (which cut prompts) take over
    longest = max(len(encode_prompt(tiny_policy.tokenizer, prompt)) for prompt in prompts)
    assert grammar_skill_outputs(tiny_policy, prompts, templates, max_templates=4, max_length=longest + 5, **options) == (
        grammar_skill_outputs(tiny_policy, prompts, templates, max_templates=4, max_length=longest + 5, reuse_cache=False, **options)
    )


@pytest.mark.parametrize("concrete", [True, False])
def test_the_policy_teacher_writes_from_each_episodes_own_templates(episodes, tiny_policy, concrete):
    teacher = CompactPolicyTeacher(tiny_policy, concrete=concrete, max_templates=2)
    chosen = list(episodes.values())
    records = teacher.write_skills(chosen)
    assert parse_rate(records) == 1.0 and all(record.teacher == "compact_policy" for record in records)
    for episode, record in zip(chosen, records):
        head, templates = parse_compact_skill(record.skill)
        assert 1 <= len(templates) <= 2 and set(templates) <= set(episode_templates(episode, concrete))
    with pytest.raises(ValueError, match="vocabulary is empty"):
        grammar_skill_outputs(tiny_policy, ["prompt"], [])
    with pytest.raises(ValueError, match="2 vocabularies for 1 prompts"):
        grammar_skill_outputs(tiny_policy, ["prompt"], [["a"], ["b"]])


def test_concrete_skills_name_the_episodes_own_actions(episodes):
    twc = compact_skill(episodes["twc-gold"], concrete=True)
    head, templates = parse_compact_skill(twc)
    played = [concrete_action(step.action) for step in episodes["twc-gold"].steps]
    assert head == "do:" and templates and all(template in played for template in templates)
    assert "<" not in twc  # no roles: objects by name
    assert compact_skill(episodes["twc-failure"], concrete=True) == "avoid: eat the moon; look around"
    assert concrete_action("  Put  Apple; in Fridge ") == "put apple, in fridge"
    for episode in episodes.values():
        for concrete in (True, False):
            assert set(parse_compact_skill(compact_skill(episode, concrete=concrete))[1]) <= set(
                episode_templates(episode, concrete)
            )


def test_the_grammar_follows_the_outcome_and_never_repeats_a_template_in_a_row(episodes, tiny_policy):
    chosen = list(episodes.values())
    records = CompactPolicyTeacher(tiny_policy, concrete=True, max_templates=6).write_skills(chosen)
    for episode, record in zip(chosen, records):
        head, templates = parse_compact_skill(record.skill)
        assert head == ("do:" if episode.success else "avoid:")
        assert all(first != second for first, second in zip(templates, templates[1:]))
    with pytest.raises(ValueError, match="heads must be one of"):
        grammar_skill_outputs(tiny_policy, ["prompt"], [["a"]], heads=["maybe:"])

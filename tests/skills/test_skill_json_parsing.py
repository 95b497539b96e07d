"""JSON repair cases of parse_skill_json."""

import pytest

from hindsight.skills import parse_skill_json

pytestmark = pytest.mark.unit

EXPECTED = {"episode_summary": "Took the apple.", "episode_skill": "take <object> before put <object> in <container>"}


@pytest.mark.parametrize(
    "text",
    [
        '{"episode_summary": "Took the apple.", "episode_skill": "take <object> before put <object> in <container>"}',
        'Here is my analysis.\n```json\n{"episode_summary": "Took the apple.",\n'
        ' "episode_skill": "take <object> before put <object> in <container>",}\n```\nHope this helps!',
        '```\n{"episode_summary": "Took the apple.", "episode_skill": '
        '"take <object> before put <object> in <container>"}\n```',
        'Sure. {"episode_summary": "Took the apple.", "episode_skill": '
        '"take <object> before put <object> in <container>",} That is all.',
        "{'episode_summary': 'Took the apple.', 'episode_skill': 'take <object> before put <object> in <container>'}",
        '{\u201cepisode_summary\u201d: \u201cTook the apple.\u201d, \u201cepisode_skill\u201d: '
        '\u201ctake <object> before put <object> in <container>\u201d}',
        # a first object in the prose that is not the skill is skipped
        'Format: {"a": 1}. Answer: {"episode_summary": "Took the apple.", '
        '"episode_skill": "take <object> before put <object> in <container>"}',
        # cut off before the closing brace
        '{"episode_summary": "Took the apple.", "episode_skill": "take <object> before put <object> in <container>"',
        # a newline inside a string value
        '{"episode_summary": "Took the\napple.", "episode_skill": "take <object> before put <object> in <container>"}',
    ],
)
def test_parses_wrapped_and_repairable_json(text):
    assert parse_skill_json(text) == EXPECTED


def test_apostrophes_inside_double_quotes_and_braces_inside_strings():
    text = '{"episode_summary": "It didn\'t {work}", "episode_skill": "don\'t loop"}'
    assert parse_skill_json(text) == {"episode_summary": "It didn't {work}", "episode_skill": "don't loop"}


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "garbage without any json",
        "{not json at all}",
        '{"episode_summary": "only a summary"}',
        '{"episode_summary": "", "episode_skill": "empty summary"}',
        '{"episode_summary": "s", "episode_skill": ["not", "a", "string"]}',
        "[1, 2, 3]",
        "{" * 5000,
        "{'episode_summary': 'it didn't close the quote', 'episode_skill': 'x'}",
    ],
)
def test_failures_return_none(text):
    assert parse_skill_json(text) is None

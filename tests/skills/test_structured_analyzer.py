"""Structured analyzer decoding with a real (untrained) tiny policy: every analysis parses
into the two skill fields in the project's frame, and the analyzer switch picks the
structured or the free-text path."""

from __future__ import annotations

import json

import pytest

from hindsight.policy.generation import generate_text
from hindsight.policy.model import build_policy
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.skills.parsing import parse_skill_json
from hindsight.skills.structured import structured_skill_outputs
from hindsight.skills.policy_teacher import policy_analyzer
from hindsight.config import ProjectConfig
from hindsight.params import ParameterError, build

pytestmark = pytest.mark.unit

PROMPTS = [
    "Task: put the apple in the fridge.\nepisode_success: failure\nStep 1\nObservation: You see a fridge.\n"
    "Response: take apple\nAction valid: true\nReturn only JSON with fields episode_summary, episode_skill.",
    "Task: cook the egg.\nepisode_success: success\nStep 1\nObservation: You see a stove.\n"
    "Response: cook egg in stove\nAction valid: true\nReturn only JSON with fields episode_summary, episode_skill.",
]


@pytest.fixture(scope="module")
def untrained_policy():
    texts = PROMPTS + ['{"episode_summary": "took the apple", "episode_skill": "open the fridge before putting food in"}']
    return build_policy("tiny", train_tokenizer(texts * 20, vocab_size=400), seed=0, device="cpu")


def test_every_structured_analysis_parses(untrained_policy):
    outputs = structured_skill_outputs(untrained_policy, PROMPTS, summary_tokens=6, skill_tokens=10)
    assert len(outputs) == len(PROMPTS)
    for output in outputs:
        fields = json.loads(output)
        assert list(fields) == ["episode_summary", "episode_skill"]
        assert '"' not in fields["episode_summary"] and "\n" not in fields["episode_skill"]
        assert parse_skill_json(output) == fields  # both fields non-empty: at least one token each


def test_the_analyzer_switch(untrained_policy):
    structured = policy_analyzer(untrained_policy, 15, structured=True)(PROMPTS)
    assert structured == structured_skill_outputs(untrained_policy, PROMPTS, summary_tokens=5, skill_tokens=10)
    free = policy_analyzer(untrained_policy, 15)(PROMPTS)
    assert free == generate_text(untrained_policy, PROMPTS, max_new_tokens=15)
    assert free != structured


def test_budgets_are_checked(untrained_policy):
    with pytest.raises(ValueError, match="token budgets"):
        structured_skill_outputs(untrained_policy, PROMPTS, summary_tokens=0)


def test_the_switch_must_be_a_boolean():
    """A quoted "false" in YAML is a string: named in the error instead of read as true."""
    with pytest.raises(ParameterError, match="'analyzer.structured' .* must be true or false, got 'false'"):
        build(ProjectConfig, {"analyzer": {"structured": "false"}})

"""The world model's held-out scores per action type, with the line score beside exact match
(``world_model.quality``): known answers on page views in the one-line format, and the
metrics of a real (tiny, untrained) world model equal to the table's own group means."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.world_model.quality import action_type, heldout_quality, line_score, observation_lines
from hindsight.world_model.transitions import SOLVED_MARKER, transition_prompt

VIEW = 'Instruction: Enter "Dannie" and press Submit. [5] INPUT_text value="" @(16,59,128,21) [6] BUTTON "Submit" @(16,85,101,31)'
TYPED = VIEW.replace('value=""', 'value="Dannie"')


def test_a_page_view_splits_into_its_element_lines_and_the_line_score_is_their_f1():
    assert observation_lines(VIEW) == [
        'Instruction: Enter "Dannie" and press Submit.', '[5] INPUT_text value="" @(16,59,128,21)', '[6] BUTTON "Submit" @(16,85,101,31)',
    ]
    assert observation_lines("You are in the kitchen. [a note]") == ["You are in the kitchen. [a note]"]  # one line
    assert line_score(VIEW, VIEW) == 1.0
    assert line_score(TYPED, VIEW) == pytest.approx(2 * 2 / 6)  # 2 of 3 lines right on each side
    assert line_score(SOLVED_MARKER, VIEW) == 0.0
    assert line_score("You see a door.", "You see a door. ") == 1.0 and line_score("a", "b") == 0.0
    assert line_score("", "") == 1.0


def test_the_action_type_is_the_first_word_of_the_last_action():
    prompt = transition_prompt("t", [(VIEW, "click [6]")], VIEW, 'type [5] "Dannie"', max_chars=600)
    assert action_type(prompt) == "type"
    assert action_type(transition_prompt("t", [], VIEW, "press Enter", max_chars=600)) == "press"
    assert action_type("Task: t\nNext observation:") == "none"
    assert action_type("Action: Open? door") == "open_"  # a metric name keeps no odd character


def test_heldout_quality_reports_each_action_type(tiny_policy):
    rows = []
    for i, (action, response) in enumerate((('type [5] "Dannie"', TYPED), ("click [6]", SOLVED_MARKER), ("click [5]", VIEW), ("press Enter", VIEW))):
        rows.append({"episode_id": f"e{i}", "group_id": "g", "task_type": "enter-text", "step": 0, "source": "expert",
                     "prompt": transition_prompt("Enter it.", [], VIEW, action, max_chars=600), "response": response,
                     "terminal": response == SOLVED_MARKER, "heldout": True})
    table, metrics = heldout_quality(tiny_policy, pd.DataFrame(rows), max_new_tokens=8, max_length=512, max_examples=10)
    assert sorted(table["action_type"]) == ["click", "click", "press", "type"]
    for kind, part in table.groupby("action_type"):
        assert metrics[f"world_model/heldout_exact_match/{kind}"] == pytest.approx(part["exact_match"].mean())
        assert metrics[f"world_model/heldout_line_score/{kind}"] == pytest.approx(part["line_score"].mean())
    assert table["line_score"].between(0, 1).all()
    assert (table["line_score"] == [line_score(p, r) for p, r in zip(table["predicted"], table["response"])]).all()
    assert metrics["world_model/heldout_line_score"] == pytest.approx(table["line_score"].mean())

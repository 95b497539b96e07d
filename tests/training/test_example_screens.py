"""The screens of SFT examples (``training.example_screens``) and the places that rebuild step
samples from a table without screens (``table_samples.refuse_policy_that_sees``).

Each step example finds its screen in a screenshot table by episode and step (the rows of one
step share one array, the analyzer's pairs stay text); a step without one is refused naming
the row, its kind, its episode and step and the table. The scoring pipeline and the positive
replay refuse a policy that sees by name and let a text policy through; the Stage-1 mixture
keeps the step keys only where there are screens (a text run's table is as before).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hindsight.config import ProjectConfig, ScoringConfig, Stage1Config
from hindsight.data.screenshots import screenshot_row, screenshot_table
from hindsight.pipelines.scoring.nodes import score_distillation_signals
from hindsight.pipelines.stage1.nodes import stage1_examples
from hindsight.policy.encoding import StepSample
from hindsight.policy.model import build_policy
from hindsight.policy.screens import ScreenImage
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.stage1.teacher_fit import fit_mixture
from hindsight.training.example_screens import example_screens, screens_of_samples
from hindsight.training.positive_replay import check_replayable


def _screen(value: int) -> np.ndarray:
    return np.full((6, 4, 3), value, dtype=np.uint8)


SCREENS = screenshot_table([screenshot_row("e1", 0, _screen(10)), screenshot_row("e1", 1, _screen(20)), screenshot_row("e2", 0, _screen(30))])


def _examples(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["episode_id", "step", "kind"]).assign(prompt="p", response="r")


def test_each_step_gets_its_own_screen_and_the_analyzer_none():
    examples = _examples([("e1", 1, "bc"), ("e1", 0, "bc"), ("e1", 1, "skill_bc"), ("e2", 0, "skill_swap"), ("e1", None, "analyzer")])
    screens = example_screens(examples, SCREENS)
    assert [None if s is None else int(s[0, 0, 0]) for s in screens] == [20, 10, 20, 30, None]
    assert screens[0] is screens[2] and screens[0].shape == (6, 4, 3) and screens[0].flags.writeable


def test_a_step_without_its_screen_is_refused_naming_it():
    examples = _examples([("e1", 0, "bc"), ("e3", 2, "bc")])
    with pytest.raises(ValueError, match=r"row 1 \(kind 'bc', episode 'e3' step 2\) has no screen in 'screenshots' \(1 of the 2"):
        example_screens(examples, SCREENS)


def test_steps_of_a_table_without_screens_are_refused_with_the_remedy():
    examples = _examples([("e1", 0, "bc"), ("e1", 1, "bc")])
    for screens in (SCREENS.iloc[:0], None):
        with pytest.raises(ValueError, match=r"'screenshots' holds no screen of any of the 2 step examples.*vision: false"):
            example_screens(examples, screens)


def test_the_own_rollouts_steps_are_refused_with_their_setting():
    examples = _examples([("e1", 0, "bc"), ("skills/rollout/7", 0, "own_skill_bc")])
    with pytest.raises(ValueError, match=r"kind 'own_skill_bc'.*stage1.own_rollout_repeat: 0"):
        example_screens(examples, SCREENS)


def test_examples_without_keys_are_refused():
    with pytest.raises(ValueError, match="no 'episode_id' and 'step' columns"):
        example_screens(pd.DataFrame({"prompt": ["p"], "response": ["r"], "kind": ["bc"]}), SCREENS)
    assert example_screens(pd.DataFrame({"prompt": ["p"], "response": ["r"], "kind": ["analyzer"]}), None) == [None]


def test_samples_that_carry_screens_make_a_table():
    image = ScreenImage({}, 0, 4, "k", _screen(40))
    samples = [
        StepSample(prompt_ids=[1], response_ids=[2], episode_id="r1", step=step, image=shown)
        for step, shown in ((0, image), (1, None), (0, image))
    ]
    table = screens_of_samples(samples)
    assert list(zip(table["episode_id"], table["step"])) == [("r1", 0)]
    assert int(example_screens(_examples([("r1", 0, "fit_plain")]), table)[0][0, 0, 0]) == 40


@pytest.fixture(scope="module")
def policies():
    tokenizer = train_tokenizer(["Task: click the button", "click [4]", "type [3] \"apple\""] * 8, vocab_size=300)
    return {vision: build_policy("tiny", tokenizer, seed=0, device="cpu", vision=vision) for vision in (False, True)}


def test_the_scoring_pipeline_refuses_a_policy_that_sees(policies):
    empty = pd.DataFrame({"episode_id": [], "skill": [], "parse_ok": []}).astype({"parse_ok": bool})
    with pytest.raises(ValueError, match=r"^the scoring pipeline \(skill_rollouts\) rebuilds step samples .* no screenshots"):
        score_distillation_signals(pd.DataFrame({"episode_id": []}), empty, policies[True], ProjectConfig(), ScoringConfig())
    with pytest.raises(ValueError, match="no trajectory of the table has a parsed skill"):  # a text policy goes on
        score_distillation_signals(pd.DataFrame({"episode_id": []}), empty, policies[False], ProjectConfig(), ScoringConfig())


def test_the_positive_replay_refuses_a_policy_that_sees(policies):
    with pytest.raises(ValueError, match=r"positive_replay.*no screenshots.*positive_replay: false for a policy that sees"):
        check_replayable(policies[True])
    check_replayable(policies[False])


def test_the_stage1_mixture_keeps_step_keys_only_where_there_are_screens():
    bc = pd.DataFrame({"episode_id": ["e1"], "step": [0], "prompt": ["Task: t\nYour turn.\n"], "response": ["look"], "kind": ["bc"]})
    skills = pd.DataFrame({"episode_id": ["e1"], "skill": ["do: look"], "accepted": [True], "parse_ok": [True]})
    analyzer = pd.DataFrame({"prompt": ["Analyse.\n"], "response": ["do: look"], "episode_id": ["e1"], "held_out": [False]})
    text = stage1_examples(bc, bc.iloc[:0], skills, analyzer, Stage1Config(), SCREENS.iloc[:0])
    assert list(text.columns) == ["prompt", "response", "kind"]
    assert text.equals(stage1_examples(bc, bc.iloc[:0], skills, analyzer, Stage1Config()))
    seen = stage1_examples(bc, bc.iloc[:0], skills, analyzer, Stage1Config(), SCREENS)
    assert list(seen.columns) == ["prompt", "response", "kind", "episode_id", "step"]
    assert seen[["prompt", "response", "kind"]].equals(text)
    assert [None if s is None else int(s[0, 0, 0]) for s in example_screens(seen, SCREENS)] == [10, 10, None]
    pairs = pd.DataFrame({"episode_id": ["r1"], "step": [0], "prompt": ["p"], "response": ["r"], "kind": ["fit_plain"]})
    assert list(fit_mixture(pairs, seen, 1).columns) == ["prompt", "response", "kind", "episode_id", "step"]
    assert list(fit_mixture(pairs, text, 1).columns) == ["prompt", "response", "kind"]

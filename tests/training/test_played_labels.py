"""The loop's action labels (``training.played_labels``): each played step labelled optimal
or not from the environment (``envs.action_labels``), matched onto the training table by
episode and step, a game without labels asked once; and what SEED's gate makes of them
(``methods.seed.labelled_gate_figures``): its token means on optimal and suboptimal
actions, the push (``algorithms.gate_push``) and the AUROC of the summed shift."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest
import torch

from hindsight import algorithms
from hindsight.envs.base import EnvironmentSpec, StepResult, ToyEnvironment
from hindsight.methods.seed import labelled_gate_figures
from hindsight.policy.encoding import StepSample
from hindsight.rollout.tasks import TaskRef
from hindsight.training.played_labels import LABEL_COLUMN, ActionLabeller, action_labeller
from hindsight.training.batch import RolloutBatch

pytestmark = pytest.mark.unit

COUNT = EnvironmentSpec("toy", "count")
SILENT = EnvironmentSpec("toy", "silent")


class Counter(ToyEnvironment):
    """Count to three: the gold sequence is "one", "two", "three"."""

    GOLD = ("one", "two", "three")
    resets = 0
    closed = False

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        type(self).resets += 1
        return "Count.", {}

    def step(self, action: str) -> StepResult:
        return "Counted.", 0.0, False, False, {}

    def gold_actions(self) -> list[str]:
        return list(self.GOLD)

    def close(self) -> None:
        type(self).closed = True


class Silent(Counter):
    """A game with no gold sequence: it labels nothing."""

    GOLD = ()
    resets = 0


def factory(spec: EnvironmentSpec) -> Counter:
    return Counter() if spec.game == "count" else Silent()


def played(episodes: dict[str, tuple[TaskRef, list[str]]]) -> pd.DataFrame:
    """Step rows of these episodes (episode id -> its task and actions), in play order."""
    return pd.DataFrame([
        {"episode_id": episode, "group_id": task.group_id, "step": step, "action": action}
        for episode, (task, actions) in episodes.items() for step, action in enumerate(actions)
    ])


def test_played_steps_are_labelled_along_the_gold_prefix_and_matched_onto_the_table():
    count, silent = TaskRef(COUNT, 0), TaskRef(SILENT, 0)
    rows = played({
        "gold": (count, ["one", "Two", "three"]),  # case and spacing do not matter
        "astray": (count, ["one", "four", "three"]),  # labelled up to the first deviation
        "quiet-1": (silent, ["one"]), "quiet-2": (silent, ["one"]),
    })
    batch = RolloutBatch(table=rows[rows["episode_id"] != "gold"].iloc[::-1].reset_index(drop=True), samples=[], played=rows)
    Silent.resets = 0
    with action_labeller(factory, True) as labeller:
        labeller.annotate(batch, [count, silent])
    assert Counter.closed  # closed after the update, before the next rollout
    labels = dict(zip(zip(batch.table["episode_id"], batch.table["step"]), batch.table[LABEL_COLUMN]))
    assert labels[("astray", 0)] == 1.0 and labels[("astray", 1)] == 0.0 and math.isnan(labels[("astray", 2)])
    assert math.isnan(labels[("quiet-1", 0)]) and math.isnan(labels[("quiet-2", 0)])
    assert LABEL_COLUMN not in batch.played  # the kept rollout stays as the engine wrote it
    assert Silent.resets == 1  # a game without labels is asked once
    assert batch.metrics["labels/labelled_step_share"] == pytest.approx(5 / 8)
    assert batch.metrics["time/labels_s"] >= 0.0
    assert batch.metrics["labels/optimal_share"] == pytest.approx(4 / 5)


def test_labelling_off_or_inside_a_world_model_leaves_the_batch_alone():
    count = TaskRef(COUNT, 0)
    rows = played({"gold": (count, ["one"])})
    off, simulated = (RolloutBatch(table=rows, samples=[], played=rows) for _ in range(2))
    simulated.simulated = True
    ActionLabeller(None).annotate(off, [count])
    with action_labeller(factory, True) as labeller:
        labeller.annotate(simulated, [count])
    for batch in (off, simulated):
        assert LABEL_COLUMN not in batch.table and not batch.metrics


def sample(episode: str, tokens: int, forced: int = 0) -> StepSample:
    """A step sample of ``tokens`` response tokens, the last ``forced`` of them forced."""
    allowed = [[1, 2]] * (tokens - forced) + [[1]] * forced
    return StepSample(episode_id=episode, prompt_ids=[0], response_ids=[1] * tokens, allowed_ids=allowed,
                      old_logprobs=torch.zeros(tokens))


def labelled_batch(labels: list[float], gaps: list[list[float]], teacher: list[bool]) -> RolloutBatch:
    """One sample per label, its chosen tokens' gaps l_skill - l_old as given (one forced token each)."""
    samples = [sample(f"e{i}", len(gap) + 1, forced=1) for i, gap in enumerate(gaps)]
    table = pd.DataFrame({"episode_id": [s.episode_id for s in samples], "step": 0, LABEL_COLUMN: labels})
    batch = RolloutBatch(table=table, samples=samples, played=table)
    batch.record_old_logprobs()
    batch.teacher_logp = [torch.tensor([*gap, 9.0]) if has else None for gap, has in zip(gaps, teacher)]  # the forced token's gap: ignored
    return batch


def test_seeds_gate_on_labelled_actions_is_its_push_and_the_shifts_ranking():
    batch = labelled_batch(
        labels=[1.0, 1.0, 0.0, 0.0, math.nan, 0.0],
        gaps=[[0.4, 0.2], [0.1], [-0.3, 0.0], [0.2], [5.0], [7.0]],
        teacher=[True, True, True, True, True, False],  # the last: no skill, no teacher
    )
    figures = labelled_gate_figures(batch, gate_beta=5.0, coefficient=0.01)
    assert figures["opd/labelled_sample_share"] == pytest.approx(4 / 6)
    gate = lambda gaps: float(torch.sigmoid(5.0 * torch.tensor(gaps)).mean())  # noqa: E731
    assert figures["opd/gate_optimal"] == pytest.approx(gate([0.4, 0.2, 0.1]))
    assert figures["opd/gate_suboptimal"] == pytest.approx(gate([-0.3, 0.0, 0.2]))
    assert figures["opd/gate_push"] == pytest.approx(algorithms.gate_push([0.4, 0.2, 0.1], [-0.3, 0.0, 0.2], 5.0, 0.01))
    assert figures["opd/gate_push"] > 0
    # summed shifts: optimal 0.6, 0.1; suboptimal -0.3, 0.2: 3 of 4 pairs ranked right
    assert figures["opd/shift_auroc"] == pytest.approx(0.75)
    ungated = labelled_gate_figures(batch, gate_beta=5.0, coefficient=0.01, gate="ungated")
    assert (ungated["opd/gate_optimal"], ungated["opd/gate_push"], ungated["opd/shift_auroc"]) == (1.0, 0.0, pytest.approx(0.75))


def test_without_both_sides_only_the_labelled_share_is_logged():
    one_sided = labelled_batch(labels=[1.0, math.nan], gaps=[[0.4], [0.1]], teacher=[True, True])
    assert labelled_gate_figures(one_sided, 5.0, 0.01) == {"opd/labelled_sample_share": 0.5}
    unlabelled = labelled_batch(labels=[1.0], gaps=[[0.4]], teacher=[True])
    unlabelled.table = unlabelled.table.drop(columns=[LABEL_COLUMN])
    assert labelled_gate_figures(unlabelled, 5.0, 0.01) == {}


class Broken(Counter):
    """A game whose environment fails while labelling."""

    def gold_actions(self) -> list[str]:
        raise OSError("simulator jar vanished")


def test_an_environment_failing_while_labelling_leaves_its_game_unlabelled_and_the_run_going(caplog):
    broken, count = TaskRef(EnvironmentSpec("toy", "broken"), 0), TaskRef(COUNT, 0)
    rows = played({"a": (broken, ["one"]), "b": (broken, ["one"]), "c": (count, ["one"])})
    batch = RolloutBatch(table=rows, samples=[], played=rows)
    with action_labeller(lambda spec: Broken() if spec.game == "broken" else Counter(), True) as labeller:
        labeller.annotate(batch, [broken, count])
    assert list(batch.table[LABEL_COLUMN].isna()) == [True, True, False]
    assert "Action labels: broken failed (OSError: simulator jar vanished)" in caplog.text
    assert caplog.text.count("Action labels:") == 1  # asked once, then skipped

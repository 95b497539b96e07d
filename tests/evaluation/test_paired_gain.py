"""The learning gain (``evaluation.paired_gain``) on hand-made held-out episode tables: each
policy's decoding is picked on seen only (a table where unseen would pick otherwise), ties go
to greedy and then the lower temperature; the paired gain is above 0 when every task favours
the end policy, exactly 0 with the interval (0, 0) for identical agents, refused when the two
agents share no task; the verdict line follows the interval; the evaluation report carries
the section and logs ``gain/<split>/...`` only when both policies played seen and unseen."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.evaluation.metrics import wilson_interval
from hindsight.evaluation.paired_gain import (
    best_decoding,
    decoding_order,
    episode_outcomes,
    learning_gain_markdown,
    learning_gain_section,
    learning_gain_table,
    paired_gain,
)


def play(agent: str, split: str, wins: list[bool], steps: int = 2, trial: int = 0, seed_from: int = 0) -> pd.DataFrame:
    """One episode per task (seeds ``seed_from``...), ``steps`` steps each, won on the last step or not."""
    rows = []
    for index, won in enumerate(wins):
        seed = seed_from + index
        for step in range(steps):
            rows.append({
                "episode_id": f"{agent}:{split}/{seed}/{trial}", "group_id": f"twc/{split}/{seed}", "env": "textworldexpress", "task_type": "twc",
                "split": "train" if split == "seen" else "test", "seed": seed, "step": step, "action_valid": True,
                "won": bool(won and step == steps - 1), "done": step == steps - 1, "reward": 0.0,
                "agent": agent, "eval_split": split, "trial": trial,
            })
    return pd.DataFrame(rows)


def table(*plays: pd.DataFrame) -> pd.DataFrame:
    return pd.concat(plays, ignore_index=True)


def test_outcomes_are_one_row_per_task_won_when_any_step_is():
    outcomes = episode_outcomes(table(play("rl-greedy", "seen", [True, False, True], steps=3)))
    assert outcomes["won"].tolist() == [1, 0, 1] and outcomes["seed"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="rl-greedy"):
        episode_outcomes(table(play("rl-greedy", "seen", [True]), play("rl-greedy", "seen", [False]).assign(episode_id="x")))


def test_the_decoding_is_picked_on_seen_even_where_unseen_would_pick_another():
    episodes = table(
        play("stage1-greedy", "seen", [True, True, False, False]),
        play("stage1-t0.7", "seen", [True, False, False, False]),
        play("stage1-greedy", "unseen", [False, False, False, False]),
        play("stage1-t0.7", "unseen", [True, True, True, True]),
    )
    outcomes = episode_outcomes(episodes)
    assert best_decoding(outcomes, "stage1") == "greedy"
    assert best_decoding(outcomes, "stage1", split="unseen") == "t0.7"  # what the rule must not use
    with pytest.raises(ValueError, match='"rl" played no decoding on the "seen" split'):
        best_decoding(outcomes, "rl")


def test_ties_go_to_greedy_then_to_the_lower_temperature():
    wins = [True, False]
    outcomes = episode_outcomes(table(*(play(f"rl-{name}", "seen", wins) for name in ("t0.7", "t0.2", "greedy", "t0.4"))))
    assert best_decoding(outcomes, "rl") == "greedy"
    assert best_decoding(outcomes[outcomes["agent"] != "rl-greedy"], "rl") == "t0.2"
    assert sorted(["sampled", "t0.4", "greedy"], key=decoding_order) == ["greedy", "t0.4", "sampled"]
    assert best_decoding(outcomes[outcomes["agent"] != "rl-greedy"], "rl", temperatures={"t0.7": 0.1}) == "t0.7"


def test_every_task_favouring_the_end_gives_an_interval_above_zero():
    start = play("stage1-greedy", "unseen", [False] * 6 + [True] * 2)
    end = play("rl-greedy", "unseen", [True] * 8)
    gain = paired_gain(episode_outcomes(table(start, end)), "stage1-greedy", "rl-greedy")
    assert gain["tasks"] == 8 and gain["mean"] == pytest.approx(0.75)
    assert 0 < gain["low"] <= gain["mean"] <= gain["high"] <= 1
    assert (gain["end_only"], gain["start_only"]) == (6, 0)
    assert (gain["start_success"], gain["end_success"]) == (0.25, 1.0)
    assert (gain["start_low"], gain["start_high"]) == pytest.approx(wilson_interval(2, 8))


def test_identical_agents_give_exactly_zero():
    wins = [True, False, True, True, False]
    outcomes = episode_outcomes(table(play("stage1-greedy", "unseen", wins), play("rl-greedy", "unseen", wins)))
    gain = paired_gain(outcomes, "stage1-greedy", "rl-greedy")
    assert (gain["mean"], gain["low"], gain["high"]) == (0.0, 0.0, 0.0)
    assert (gain["end_only"], gain["start_only"]) == (0, 0)


def test_only_shared_tasks_are_paired_and_none_shared_is_refused():
    start = play("stage1-greedy", "unseen", [False, False, False])
    end = play("rl-greedy", "unseen", [True, True, True], seed_from=2)  # seeds 2, 3, 4: one shared
    assert paired_gain(episode_outcomes(table(start, end)), "stage1-greedy", "rl-greedy")["tasks"] == 1
    other_trial = play("rl-greedy", "unseen", [True, True, True], trial=1)
    with pytest.raises(ValueError, match='"stage1-greedy" and "rl-greedy" share no task on the "unseen" split'):
        paired_gain(episode_outcomes(table(start, other_trial)), "stage1-greedy", "rl-greedy")


def _two_policies(rl_unseen: list[bool]) -> pd.DataFrame:
    """Stage 1 (greedy best on seen) and RL (sampled best on seen) on 10 seen and 10 unseen tasks."""
    return table(
        play("stage1-greedy", "seen", [True] * 5 + [False] * 5),
        play("stage1-sampled", "seen", [True] * 3 + [False] * 7),
        play("stage1-greedy", "unseen", [True] * 2 + [False] * 8),
        play("stage1-sampled", "unseen", [True] * 9 + [False]),
        play("rl-greedy", "seen", [True] * 6 + [False] * 4),
        play("rl-sampled", "seen", [True] * 8 + [False] * 2),
        play("rl-greedy", "unseen", [False] * 10),
        play("rl-sampled", "unseen", rl_unseen),
    )


def test_the_table_pairs_the_picks_on_unseen_and_seen_and_the_verdict_follows_the_interval():
    gain = learning_gain_table(_two_policies([True] * 9 + [False]))
    assert gain["split"].tolist() == ["unseen", "seen"]
    assert set(gain["start_decoding"]) == {"greedy"} and set(gain["end_decoding"]) == {"sampled"}
    unseen = gain.iloc[0]
    assert unseen["mean"] == pytest.approx(0.7) and unseen["low"] > 0
    text = learning_gain_markdown(gain)
    assert "| unseen | stage1-greedy | rl-sampled | 10 |" in text
    assert text.strip().splitlines()[-1].startswith("Verdict: gain above 0 on unseen")
    flat = learning_gain_table(_two_policies([True, True, True] + [False] * 7))  # one task of ten better
    assert flat.iloc[0]["mean"] == pytest.approx(0.1) and flat.iloc[0]["low"] <= 0
    assert learning_gain_markdown(flat).strip().splitlines()[-1].startswith("Verdict: no gain shown on unseen")
    assert "gain above 0" not in learning_gain_markdown(flat)
    worse = learning_gain_table(_two_policies([False] * 10)).assign(mean=-0.1, low=-0.15, high=-0.05)  # every bound below 0
    assert learning_gain_markdown(worse).strip().splitlines()[-1].startswith("Verdict: a loss on unseen")


def test_the_report_carries_the_section_only_when_both_policies_played_both_splits(monkeypatch):
    from hindsight.pipelines.evaluation import nodes

    logged = {}
    monkeypatch.setattr(nodes.tracking, "log_metrics", lambda metrics, step=None: logged.update(metrics))
    episodes = _two_policies([True] * 9 + [False])
    stage1, rl = episodes[episodes["agent"].str.startswith("stage1")], episodes[episodes["agent"].str.startswith("rl")]
    text = nodes.report_evaluation(stage1, rl)[3]
    assert text.index("Held-out success") < text.index("## Learning gain")
    assert logged["gain/unseen/mean"] == pytest.approx(0.7) and logged["gain/unseen/low"] > 0
    assert {"gain/seen/mean", "gain/seen/low", "gain/seen/high", "gain/unseen/high"} <= set(logged)
    logged.clear()
    seen_only = rl[rl["eval_split"] == "seen"]
    assert "Learning gain" not in nodes.report_evaluation(stage1, seen_only)[3]
    assert not any(key.startswith("gain/") for key in logged)
    assert learning_gain_section(seen_only) == ("", {})

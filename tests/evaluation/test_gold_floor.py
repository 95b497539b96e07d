"""The gold and scripted references of held-out evaluation (``evaluation.gold_floor``,
``evaluation.scripted``): on the dual-control domain the gold solver plays every held-out
task ``trials_per_task`` times and scores pass^4 = 1.0 in every breakdown, and each
scripted exploit agent plays the same tasks as many times, scoring far below it; families
without a conversational gold solver or scripts play none."""

from __future__ import annotations

import pandas as pd

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.dual_control.exploits import EXPLOITS
from hindsight.evaluation.gold_floor import gold_reference_episodes, scripted_reference_episodes, with_gold_reference
from hindsight.evaluation.heldout import HeldoutConfig, HeldoutPlay, heldout_tasks
from hindsight.evaluation.pass_k import pass_k_summary

SPEC = EnvironmentSpec("dual_control", "telecom", {}, max_steps=20)


def test_the_gold_agent_plays_every_held_out_task_and_wins_every_trial():
    config = HeldoutConfig(play=HeldoutPlay(episodes_per_game=12, trials_per_task=4))
    gold = gold_reference_episodes([SPEC], make_env, config)
    tasks = heldout_tasks([SPEC], config)
    assert set(gold["agent"]) == {"gold"} and set(gold["eval_split"]) == {"seen", "unseen"}
    for split, refs in tasks.items():
        played = gold[gold["eval_split"] == split]
        assert sorted(set(played["seed"])) == sorted(ref.seed for ref in refs)
        assert played.groupby("seed")["trial"].nunique().eq(4).all()
    summary = pass_k_summary(gold, resamples=50)
    assert set(summary["breakdown"]) == {"task_type", "intent", "outcome", "issues", "persona", "fault"}
    assert (summary.loc[summary["k"] == 4, "pass_k"] == 1.0).all()


def test_every_exploit_agent_plays_the_same_tasks_and_trials_and_loses_nearly_all():
    config = HeldoutConfig(play=HeldoutPlay(episodes_per_game=12, trials_per_task=2))
    scripted = scripted_reference_episodes([SPEC], make_env, config)
    assert set(scripted["agent"]) == {f"exploit-{name}" for name in EXPLOITS} and set(scripted["source"]) == {"scripted"}
    tasks = heldout_tasks([SPEC], config)
    for (agent, split), played in scripted.groupby(["agent", "eval_split"]):
        assert sorted(set(played["seed"])) == sorted(ref.seed for ref in tasks[split])
        assert played.groupby("seed")["trial"].nunique().eq(2).all()
    summary = pass_k_summary(scripted, resamples=20)
    overall = summary[(summary["breakdown"] == "task_type") & (summary["group"] == "all") & (summary["k"] == 1)]
    assert len(overall) == 2 * len(EXPLOITS) and overall["pass_k"].mean() < 0.1
    assert set(summary["k"]) == {1, 2}


def test_other_families_get_no_gold_agent_and_the_table_keeps_its_attrs():
    twc = EnvironmentSpec("textworldexpress", "twc", {}, max_steps=20)

    def never(spec):
        raise AssertionError("no environment should be built")

    config = HeldoutConfig(play=HeldoutPlay(episodes_per_game=2))
    assert gold_reference_episodes([twc], never, config).empty
    episodes = pd.DataFrame({"agent": ["random"], "won": [False]})
    episodes.attrs["missing_episodes"] = {"random/seen": 1}
    assert with_gold_reference(episodes, [twc], never, config) is episodes
    combined = with_gold_reference(episodes, [SPEC], make_env, config)
    assert set(combined["agent"]) == {"random", "gold"} | {f"exploit-{name}" for name in EXPLOITS}
    assert combined.attrs == episodes.attrs
    assert scripted_reference_episodes([twc], never, config).empty


def test_a_perfect_agent_plots_without_a_negative_error_bar():
    from hindsight.evaluation.metrics import success_summary, wilson_interval
    from hindsight.evaluation.report import success_plot

    assert wilson_interval(48, 48)[1] < 1.0  # the rounding the plot must absorb
    gold = gold_reference_episodes([SPEC], make_env, HeldoutConfig(play=HeldoutPlay(episodes_per_game=12, trials_per_task=4)))
    figure = success_plot(success_summary(gold))
    assert len(figure.axes) == 2

"""The evaluation report's section on the RL run's mechanism (``evaluation.mechanism``): one
row per update and the means of SEED's figures (parse rate, distilled share, distillation
loss, gate, teacher gap) as logged, percentages for shares; nothing for a history without
them; the report node appends it to the markdown."""

from __future__ import annotations

import pandas as pd

from hindsight.evaluation.mechanism import mechanism_markdown
from hindsight.pipelines.evaluation.nodes import report_evaluation

HISTORY = pd.DataFrame(
    {
        "update": [1, 0],
        "rollout/success_rate": [0.5, 0.25],
        "opd/skill_parse_rate": [1.0, 0.75],
        "opd/distilled_sample_ratio": [1.0, 1.0],
        "losses/opd": [0.012, 0.018],
        "opd/gate_mean": [0.49, 0.51],
        "opd/gate_active_ratio": [0.4, 0.6],
        "opd/teacher_gap_mean": [-0.03, 0.01],
        "ppo/clipfrac": [0.0, 0.0],
    }
)


def test_one_row_per_update_in_order_and_the_means():
    text = mechanism_markdown(HISTORY)
    lines = text.splitlines()
    assert lines[0].startswith("## ")
    assert lines[2] == (
        "| update | training rollouts won | skills parsed | step samples distilled | distillation loss | gate mean"
        " | tokens with gate > 0.5 | teacher gap (nats) |"
    )
    assert lines[4] == "| 0 | 25.0% | 75.0% | 100.0% | 0.0180 | 0.5100 | 60.0% | 0.0100 |"
    assert lines[5] == "| 1 | 50.0% | 100.0% | 100.0% | 0.0120 | 0.4900 | 40.0% | -0.0300 |"
    assert lines[6] == "| mean | 37.5% | 87.5% | 100.0% | 0.0150 | 0.5000 | 50.0% | -0.0100 |"


def test_the_labelled_actions_figures_show_where_the_run_logged_them():
    """``training.rl.action_labels``: the share played optimal as a percentage, SEED's gate
    push in scientific notation (it is of the order of opd_coef times a gate difference), the
    shift's AUROC; an update whose sides were not both played shows "-"."""
    history = HISTORY.assign(**{
        "labels/optimal_share": [0.75, 0.5], "opd/gate_push": [1.9e-4, float("nan")], "opd/shift_auroc": [0.62, float("nan")],
    })
    lines = mechanism_markdown(history).splitlines()
    assert lines[2].endswith("| teacher gap (nats) | played actions optimal | gate push, optimal minus suboptimal | shift AUROC, optimal vs suboptimal |")
    assert lines[4].endswith("| 50.0% | - | - |") and lines[5].endswith("| 75.0% | +1.90e-04 | 0.6200 |")


def test_a_history_without_the_figures_gives_no_section():
    assert mechanism_markdown(pd.DataFrame({"update": [0], "ppo/clipfrac": [0.1]})) == ""
    assert mechanism_markdown(pd.DataFrame()) == ""
    grpo = mechanism_markdown(HISTORY[["update", "rollout/success_rate"]])
    assert "training rollouts won" in grpo and "gate" not in grpo  # only what the method logged


def _episodes(agent: str, won: bool) -> pd.DataFrame:
    """One one-step episode per task of three "click-test" tasks, won or not."""
    return pd.DataFrame(
        [
            {"agent": agent, "eval_split": "seen", "trial": 0, "episode_id": f"{agent}:miniwob/click-test/train/{task}",
             "group_id": f"miniwob/click-test/train/{task}", "env": "miniwob", "task_type": "click-test", "split": "train",
             "seed": task, "step": 0, "action_valid": True, "won": won, "reward": 10.0 * won}
            for task in range(3)
        ]
    )


def test_the_report_ends_with_the_mechanism_section(monkeypatch):
    from hindsight.pipelines.evaluation import nodes

    monkeypatch.setattr(nodes.tracking, "log_metrics", lambda metrics, step=None: None)
    _, _, _, text, _ = report_evaluation(_episodes("stage1-sampled", False), _episodes("rl-sampled", True), HISTORY)
    assert "## The RL run's mechanism (per update)" in text
    assert text.index("Held-out success") < text.index("mechanism")
    _, _, _, without, _ = report_evaluation(_episodes("stage1-sampled", False), _episodes("rl-sampled", True))
    assert "mechanism" not in without

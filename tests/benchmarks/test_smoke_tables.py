"""The benchmarks that read tables or simulate, smoke-run at a tiny size in this process:
each runs its real code path on the smallest input and prints the figure it exists for
(``conftest.run_benchmark``). The tables they read (a training history, two evaluations, a
premise check's versions) are written here in the pipelines' own columns."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.stage1.premise import PREMISE_COLUMNS

SMOKE = {
    "auroc_coverage.py": (
        ("--clusters", "4", "--simulations", "3", "--resamples", "8", "--targets", "pooled", "paired within"),
        "paired within",
    ),
    "dual_control_red_team.py": (("--tasks", "2", "--breakdown"), "| gold |"),
    "miniwob_page_overlap.py": (("--sample", "30", "--training-sample", "60", "--mappings", "hindsight", "digits"), "| digits | test |"),
    "screenshot_storage.py": (("--synthetic", "--count", "3"), "folder of PNG files"),
    "learning_curves.py": (
        ("{tmp}/history.parquet", "{tmp}/history.parquet", "--labels", "grpo 0", "seed 0", "--mean-over-seeds", "--out", "{tmp}/curves.png",
         "--level", "0.3"),
        "| GRPO | 40 (2) | 1/1 | 40 | 40 |",
    ),
    "learning_control.py": (("{tmp}/start.parquet", "{tmp}/control.parquet"), "| unseen | stage1-greedy | control-greedy |"),
    "paired_runs.py": (
        ("grpo:0={tmp}/start.parquet", "seed:0={tmp}/control.parquet", "--save", "{tmp}/outcomes.parquet"),
        "| seed | 1 | 4 | 75.0 | 25.0 | +50.0",
    ),
    "premise_pool.py": (("--last", "2", "--data", "{tmp}/data"), "minus unrelated"),
    "reliability_teacher.py": (("--case", "HTTP 500, 503, 429 then 200", "--case", "HTTP 400 (not retried)", "--down-episodes", "2"),
                               "teacher fault cases handled: 2/2"),
}


def _history(path) -> None:
    """A training history with held-out points (``evaluation.curves``' columns)."""
    pd.DataFrame({
        "update": [0, 2],
        "charts/env_steps_total": [0.0, 80.0],
        "rollout/env_episodes": [0.0, 40.0],
        **{f"heldout/{split}/{decoding}/{key}": values
           for split in ("seen", "unseen") for decoding in ("greedy", "sampled")
           for key, values in (("success_rate", [0.2, 0.4]), ("ci_low", [0.1, 0.3]), ("ci_high", [0.3, 0.5]), ("episodes", [20, 20]))},
    }).to_parquet(path)


def _evaluation(path, wins: list[int]) -> None:
    """An evaluation's episodes: the Stage-1 policy's (greedy) and an RL agent the script leaves out."""
    rows = [
        {"episode_id": f"{agent}:{split}:{seed}", "env": "textworldexpress", "task_type": "twc",
         "seed": seed + (500 if split == "seen" else 0), "step": 0, "won": bool(won), "done": True, "action_valid": True,
         "reward": 10.0 * won, "score": float(won), "agent": agent, "eval_split": split, "trial": 0}
        for agent in ("stage1-greedy", "rl-greedy") for split in ("seen", "unseen") for seed, won in enumerate(wins)
    ]
    pd.DataFrame(rows).to_parquet(path)


def _premise_versions(data) -> None:
    """Two versions of ``skill_premise``: 4 episodes (2 won), each scored with three skill sources."""
    for number, version in enumerate(("2026-01-01T00.00.00.000Z", "2026-01-02T00.00.00.000Z")):
        rows = []
        for episode in range(4):
            for offset, source in enumerate(("own", "rule", "unrelated")):
                gap = 0.05 * (episode - 1.5) - 0.02 * offset + 0.01 * number
                rows.append({
                    "episode_id": f"e{episode}", "task_type": "twc", "success": episode % 2 == 0, "skill_source": source,
                    "skill": "do: take apple; put apple in fridge", "tokens": 6 + episode, "gap_mean": gap,
                    "positive_share": float(gap > 0), "listed_tokens": 3, "listed_gap_mean": gap + 0.01,
                    "unlisted_gap_mean": gap - 0.01, "unsure_tokens": 2, "unsure_gap_mean": gap, "steps": 4,
                    "unsure_steps": 2, "listed_steps": 2, "informative_steps": 1,
                })
        folder = data / "08_reporting" / "skill_premise.parquet" / version
        folder.mkdir(parents=True)
        pd.DataFrame(rows, columns=list(PREMISE_COLUMNS)).to_parquet(folder / "skill_premise.parquet")


INPUTS = {
    "learning_curves.py": lambda tmp: _history(tmp / "history.parquet"),
    "learning_control.py": lambda tmp: (_evaluation(tmp / "start.parquet", [0, 0, 1, 0]), _evaluation(tmp / "control.parquet", [1, 1, 1, 0])),
    "paired_runs.py": lambda tmp: (_evaluation(tmp / "start.parquet", [0, 0, 1, 0]), _evaluation(tmp / "control.parquet", [1, 1, 1, 0])),
    "premise_pool.py": lambda tmp: _premise_versions(tmp / "data"),
}
"""Script -> what it reads, written into the test's temporary folder before it runs."""


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_script_prints_its_figures_at_a_tiny_size(script, run_benchmark, tmp_path):
    if script in INPUTS:
        INPUTS[script](tmp_path)
    args, expected = SMOKE[script]
    run_benchmark(script, args, expected)

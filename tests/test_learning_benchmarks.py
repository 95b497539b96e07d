"""The two scripts of conf/learning's measurements, run on small tables they would read:
benchmarks/rl_update_cost.py's phase table from a training history, and
benchmarks/learning_control.py's control-against-start gain from two evaluations."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the scripts import their neighbours by name

spec = importlib.util.spec_from_file_location("rl_update_cost", ROOT / "benchmarks" / "rl_update_cost.py")
rl_update_cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rl_update_cost)


def test_the_phase_table_is_median_and_mean_seconds_per_update_and_per_held_out_point():
    history = pd.DataFrame({
        "update": [0, 1, 2, 3],
        "time/rollout_s": [None, 2.0, 4.0, 3.0],
        "time/signals_s": [None, 0.0, 0.0, 0.0],
        "time/update_s": [None, 10.0, 12.0, 20.0],
        "time/eval_s": [None, None, 70.0, None],
    })
    table = rl_update_cost.phase_table(history)
    assert table["rollout"] == (3.0, 3.0)
    assert table["update"] == (12.0, 14.0)
    assert table["eval (per point)"] == (70.0, 70.0)
    assert "prepare" not in table  # a phase the history does not hold is left out, not invented


def _episodes(agent_wins: dict[str, list[int]]) -> pd.DataFrame:
    rows = []
    for agent, wins in agent_wins.items():
        for split in ("seen", "unseen"):
            for seed, won in enumerate(wins):
                rows.append({
                    "episode_id": f"{agent}:{split}:{seed}", "env": "textworldexpress", "task_type": "twc",
                    "seed": seed + (500 if split == "seen" else 0), "step": 0, "won": bool(won), "done": True,
                    "action_valid": True, "reward": 10.0 * won, "score": float(won),
                    "agent": agent, "eval_split": split, "trial": 0,
                })
    return pd.DataFrame(rows)


def test_the_control_is_compared_with_the_start_by_the_reports_rule(tmp_path):
    root = tmp_path / "data" / "07_model_output" / "evaluation_episodes.parquet"
    for version, wins in (("start", [0] * 20), ("control", [1] * 20)):
        (root / version).mkdir(parents=True)
        # each evaluation also holds its RL agents, which the script must leave out
        _episodes({"stage1-greedy": wins, "rl-greedy": [0] * 20}).to_parquet(root / version / "evaluation_episodes.parquet")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "learning_control.py"), "start", "control"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    assert "| unseen | stage1-greedy | control-greedy | 20 |" in done.stdout
    assert "+100.0" in done.stdout and "gain above 0" in done.stdout


def test_the_control_names_a_missing_evaluation(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "learning_control.py"), "nope", "nope"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert done.returncode != 0 and "nope/evaluation_episodes.parquet: no such evaluation" in done.stderr


@pytest.fixture(autouse=True)
def _no_mlflow(monkeypatch):
    monkeypatch.setenv("KEDRO_DISABLE_TELEMETRY", "1")


def test_the_seed_curves_figure_draws_one_panel_per_split_and_decoding(tmp_path):
    history = pd.DataFrame({
        "update": [0, 10],
        "charts/env_steps_total": [0.0, 400.0],
        **{f"heldout/{split}/{decoding}/{key}": values
           for split in ("seen", "unseen") for decoding in ("greedy", "sampled")
           for key, values in (("success_rate", [0.3, 0.5]), ("ci_low", [0.2, 0.4]), ("ci_high", [0.4, 0.6]), ("episodes", [200, 200]))},
    })
    path = tmp_path / "history.parquet"
    history.to_parquet(path)
    out = tmp_path / "curves.png"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "learning_curves.py"), str(path), str(path), "--out", str(out)], check=True)
    assert out.stat().st_size > 10_000
    spec = importlib.util.spec_from_file_location("learning_curves", ROOT / "benchmarks" / "learning_curves.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figure = module.draw([history], ["seed 0"])
    assert [axis.get_title() for axis in figure.axes] == ["unseen, greedy", "unseen, sampled", "seen, greedy", "seen, sampled"]

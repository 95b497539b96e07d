"""The grid report's held-out curves and run health per method (``experiments.curves_report``),
on hand-made histories of two methods: per evaluated update the mean over seeds with the range
over seeds (one seed: its own Wilson interval) and the episodes played so far, the methods side
by side, per update the mean health over seeds."""

from __future__ import annotations

import pandas as pd

from hindsight.evaluation.metrics import wilson_interval
from hindsight.experiments.curves_report import health_table, heldout_curves_table, side_by_side_tables
from hindsight.experiments.report import markdown_report, results_table


def _point(successes: int, trials: int = 8) -> dict[str, float]:
    low, high = wilson_interval(successes, trials)
    return {"heldout/seen/sampled/success_rate": successes / trials, "heldout/seen/sampled/ci_low": low,
            "heldout/seen/sampled/ci_high": high, "heldout/seen/sampled/episodes": float(trials)}


def _histories() -> pd.DataFrame:
    """GRPO two seeds, SEED one seed; evaluated at updates 0 and 2."""
    rows = []
    for method, seeds in (("grpo", (0, 1)), ("seed", (0,))):
        for seed in seeds:
            cell = f"{method}-f100-s{seed}"
            for update in (0, 1, 2):
                row = {"cell": cell, "method": method, "seed": seed, "fraction": 1.0, "update": update,
                       "charts/env_steps_total": 100.0 * update + 10 * seed}
                if update:
                    row.update({"rollout/success_rate": 0.25 * (seed + 1), "health/entropy": 1.0 + seed, "losses/grad_norm": 2.0,
                                "rollout/env_episodes": 4.0})
                if update != 1:
                    row.update(_point(2 * update + seed))
                rows.append(row)
    return pd.DataFrame(rows)


def test_the_curve_table_shows_the_mean_and_the_range_over_seeds():
    text = heldout_curves_table(_histories())
    grpo = text[text.index("### GRPO"):text.index("### SEED")]
    assert "| update | env steps (mean) | env episodes (mean) | seen, sampled | seeds |" in grpo
    assert "| 0 | 5 | 0 | 6.2 [0.0-12.5] | 2 |" in grpo  # 0/8 and 1/8
    assert "| 2 | 205 | 8 | 56.2 [50.0-62.5] | 2 |" in grpo  # 4/8 and 5/8; 2 updates of 4 episodes
    low, high = wilson_interval(4, 8)
    assert f"| 2 | 200 | 8 | 50.0 [{100 * low:.1f}-{100 * high:.1f}] | 1 |" in text[text.index("### SEED"):]


def test_the_methods_curves_are_side_by_side_with_the_episodes_played():
    text = side_by_side_tables(_histories())
    low, high = wilson_interval(4, 8)
    assert "### seen, sampled" in text and "| update | env episodes | GRPO | SEED |" in text
    assert f"| 2 | 8 | 56.2 [50.0-62.5] | 50.0 [{100 * low:.1f}-{100 * high:.1f}] |" in text
    fewer = _histories()
    fewer.loc[fewer["method"] == "seed", "rollout/env_episodes"] = 0.0  # a method that plays no environment episode (WM-R1)
    assert "| 2 | 56.2 [50.0-62.5] at 8 ep. | 50.0" in side_by_side_tables(fewer)


def test_the_health_table_is_the_mean_over_seeds_per_update():
    text = health_table(_histories())
    grpo = text[text.index("### GRPO"):text.index("### SEED")]
    assert "| update | training success | entropy (nats) | grad norm |" in grpo
    assert "| 1 | 37.5% | 1.5 | 2 |" in grpo and "| 2 | 37.5% | 1.5 | 2 |" in grpo
    assert health_table(_histories()[["cell", "method", "fraction", "update"]]) == ""


def test_the_grid_report_carries_both_sections():
    cells = pd.DataFrame([{"cell": "grpo-f100-s0", "method": "grpo", "seed": 0, "fraction": 1.0, "status": "finished",
                           "run_id": "r", "seconds": 1.0, "env_steps": 10.0, "key": "k", "error": None,
                           "eval/seen/all/success_rate": 0.5, "eval/seen/all/episodes": 8.0}])
    report = markdown_report(cells, results_table(cells), preset="test", histories=_histories())
    assert report.index("## Held-out curves side by side") < report.index("## Held-out curves per method") < report.index("## Run health per update") < report.index("## Cells")
    assert "## Held-out curves" not in markdown_report(cells, results_table(cells), preset="test")

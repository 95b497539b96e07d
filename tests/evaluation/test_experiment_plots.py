"""The experiment grid's learning curves: seeds reach an evaluation point after different
numbers of environment steps, so a method's line goes through one point per update (the
seeds' mean steps and mean success), not one point per seed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from hindsight.experiments.report import learning_curves_plot  # noqa: E402


def test_one_point_per_update_at_the_seeds_mean_steps():
    rows = []
    for seed, (steps, success) in enumerate([((0, 900), (0.25, 0.5)), ((0, 1000), (0.25, 0.25))]):
        for update, (step, rate) in enumerate(zip(steps, success)):
            rows.append({"method": "seed", "seed": seed, "fraction": 1.0, "update": 4 * update,
                         "charts/env_steps_total": step, "eval/seen/all/success_rate": rate})
    figure = learning_curves_plot(pd.DataFrame(rows))
    (line,) = figure.axes[0].get_lines()
    assert list(line.get_xdata()) == [0, 950]
    assert list(line.get_ydata()) == pytest.approx([25.0, 37.5])

"""The grid's curves side by side (``experiments.curves_plot``): one row of panels per split and
decoding, against updates and against environment episodes, every method a line with its
interval band; and the same as MLflow metrics stepped by update and by episodes."""

from __future__ import annotations

import pandas as pd

from hindsight.experiments.curves_plot import curve_metrics, learning_curves_plot, method_curves


def _histories() -> pd.DataFrame:
    rows = []
    for method, seeds in (("grpo", (0, 1)), ("wmr1", (0,))):
        for seed in seeds:
            for update in (0, 1, 2):
                row = {"cell": f"{method}-f100-s{seed}", "method": method, "seed": seed, "fraction": 1.0, "update": update,
                       "rollout/env_episodes": (0.0 if method == "wmr1" else 8.0) if update else float("nan")}
                if update != 1:
                    for decoding in ("sampled", "greedy"):
                        row.update({f"heldout/seen/{decoding}/success_rate": 0.25 * (seed + update / 2),
                                    f"heldout/seen/{decoding}/ci_low": 0.0, f"heldout/seen/{decoding}/ci_high": 0.9,
                                    f"heldout/seen/{decoding}/episodes": 4.0})
                rows.append(row)
    return pd.DataFrame(rows)


def test_the_method_curves_carry_the_range_over_seeds_and_the_episodes():
    curves = method_curves(_histories())
    grpo = curves[(curves["method"] == "grpo") & (curves["decoding"] == "sampled")].set_index("update")
    assert grpo.loc[2, ["mean", "low", "high", "env_episodes", "seeds"]].tolist() == [0.375, 0.25, 0.5, 16.0, 2]
    wmr1 = curves[(curves["method"] == "wmr1") & (curves["decoding"] == "sampled")].set_index("update")
    assert wmr1.loc[2, ["low", "high", "env_episodes"]].tolist() == [0.0, 0.9, 0.0]  # one seed: its own interval


def test_the_figure_has_a_panel_against_updates_and_one_against_episodes_per_series():
    figure = learning_curves_plot(_histories())
    axes = figure.axes
    assert len(axes) == 4  # seen x {greedy, sampled}, each against updates and episodes
    assert [axis.get_xlabel() for axis in axes[:2]] == ["updates", "environment episodes (training)"]
    assert all(len(axis.get_lines()) == 2 for axis in axes)  # both methods on every panel
    assert all(len(axis.collections) == 2 for axis in axes)  # each with its band


def test_the_curves_go_to_mlflow_by_update_and_by_episodes():
    logged = curve_metrics(_histories())
    by_update = [(m, step) for m, step in logged if "grid_curves/grpo/seen/sampled/mean" in m]
    by_episodes = [(m, step) for m, step in logged if "grid_curves_by_episodes/grpo/seen/sampled/mean" in m]
    assert [step for _, step in by_update] == [0, 2] and [step for _, step in by_episodes] == [0, 16]
    assert by_episodes[-1][0]["grid_curves_by_episodes/grpo/seen/sampled/high"] == 0.5


def test_one_point_per_update_at_the_seeds_mean_episodes():
    """Seeds reach a held-out point after different numbers of episodes, so a method's line goes
    through one point per update (the seeds' mean episodes and mean success), not one per seed;
    a history with only the first decoding's ``eval/<split>/all`` points is drawn too."""
    rows = []
    for seed, (episodes, success) in enumerate([(88.0, (0.25, 0.5)), (100.0, (0.25, 0.25))]):
        for update in range(5):
            row = {"method": "seed", "seed": seed, "fraction": 1.0, "update": update,
                   "rollout/env_episodes": episodes / 4 if update else float("nan")}
            if update in (0, 4):
                row["eval/seen/all/success_rate"] = success[update // 4]
            rows.append(row)
    figure = learning_curves_plot(pd.DataFrame(rows))
    (against_updates,) = figure.axes[0].get_lines()
    (against_episodes,) = figure.axes[1].get_lines()
    assert list(against_updates.get_xdata()) == [0, 4] and list(against_episodes.get_xdata()) == [0, 94]
    assert list(against_episodes.get_ydata()) == [25.0, 37.5]

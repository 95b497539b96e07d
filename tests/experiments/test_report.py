"""The grid report's pooled intervals and mechanism table, on a small hand-made grid."""

import pandas as pd

from hindsight.evaluation.metrics import wilson_interval
from hindsight.experiments.report import markdown_report, mechanism_table, pass_k_table, results_table


def _cells() -> pd.DataFrame:
    rows = []
    for method, rates in (("grpo", [0.5, 0.25]), ("seed", [0.75, 0.5])):
        for seed, rate in enumerate(rates):
            rows.append({
                "cell": f"{method}-f100-s{seed}", "method": method, "seed": seed, "fraction": 1.0, "status": "finished",
                "run_id": f"run-{method}-{seed}", "seconds": 1.0, "env_steps": 10.0, "key": "k", "error": None,
                "eval/seen/all/success_rate": rate, "eval/seen/all/episodes": 8.0,
            })
    return pd.DataFrame(rows)


def _histories() -> pd.DataFrame:
    rows = []
    for method in ("grpo", "seed"):
        for seed in (0, 1):
            for update in (0, 1, 2):
                row = {"cell": f"{method}-f100-s{seed}", "method": method, "seed": seed, "fraction": 1.0, "update": update}
                if update:
                    row["rollout/success_rate"] = 0.1 * update
                    if method == "seed":
                        row.update({"opd/skill_parse_rate": 1.0, "losses/opd": 0.02 * update, "opd/teacher_gap_mean": -0.1})
                rows.append(row)
    return pd.DataFrame(rows)


def test_report_pools_the_seeds_episodes_into_a_wilson_interval():
    cells = _cells()
    report = markdown_report(cells, results_table(cells), preset="test", histories=_histories())
    low, high = wilson_interval(10, 16)  # SEED: 6 + 4 successes of 2 x 8 episodes
    assert f"| SEED | 62.5 [{100 * low:.1f}-{100 * high:.1f}] | 16 |" in report
    assert "| GRPO | 37.5 [" in report


def test_mechanism_table_shows_only_what_a_method_logged():
    table = mechanism_table(_histories())
    header, _, grpo, seed = table.strip().splitlines()
    assert "parse rate" in header and "distillation loss" in header and "teacher gap (nats)" in header
    assert "bank hit rate" not in header  # no cell logged it
    assert seed == "| SEED | 1.000 | 0.030 | -0.100 | 10% -> 20% |"
    assert grpo == "| GRPO | - | - | - | 10% -> 20% |"


def test_mechanism_table_shows_the_gui_methods_own_terms():
    """EMPO's match and patch rates, WM-R1's world-model calls and simulated success and
    STEPO's kept samples each appear in their method's row only."""
    logged = {
        "empo": {"empo/match_rate": 0.5, "empo/patch_rate": 0.25},
        "wmr1": {"world_model/calls": 12.0, "world_model/simulated_success_rate": 1.0},
        "grpo_stepo": {"stepo/kept_sample_ratio": 0.75},
    }
    rows = [{"cell": f"{method}-f100-s0", "method": method, "seed": 0, "fraction": 1.0, "update": 1, "rollout/success_rate": 0.5, **metrics}
            for method, metrics in logged.items()]
    header, _, *lines = mechanism_table(pd.DataFrame(rows)).strip().splitlines()
    assert header == ("| method | EMPO match rate | EMPO patch rate | world-model calls | simulated success | STEPO kept samples "
                      "| training success, first -> last update |")
    assert lines == [
        "| EMPO | 0.500 | 0.250 | - | - | - | 50% -> 50% |",
        "| WM-R1 | - | - | 12.000 | 1.000 | - | 50% -> 50% |",
        "| GRPO + STEPO | - | - | - | - | 0.750 | 50% -> 50% |",
    ]


def test_mechanism_table_is_empty_without_updates():
    assert mechanism_table(pd.DataFrame()) == ""
    assert mechanism_table(_histories().query("update == 0")) == ""  # only the start evaluations


def test_report_has_a_pass_k_table_only_where_the_cells_played_trials():
    cells = _cells()
    assert "pass^" not in markdown_report(cells, results_table(cells), preset="test")
    cells["eval/seen/all/pass_hat_1"] = cells["eval/seen/all/success_rate"]
    cells["eval/seen/all/pass_hat_2"] = [0.25, 0.125, 0.5, 0.25]
    report = markdown_report(cells, results_table(cells), preset="test")
    table = pass_k_table(cells)
    header, _, grpo, seed = table.strip().splitlines()
    assert header == "| method | seen: pass^1 | seen: pass^2 | seeds |"
    assert grpo == "| GRPO | 37.5 ± 17.7 | 18.8 ± 8.8 | 2 |"
    assert seed == "| SEED | 62.5 ± 17.7 | 37.5 ± 17.7 | 2 |"
    assert table in report

"""The two SEED controls of the experiment grid on a tiny real run: one update of
the behaviour-cloned tiny policy on a twc and a cookingworld task, the policy writing its
own (compact) skills as in the grid, for SEED, ``seed_ungated`` and ``seed_unrelated_skill``.

The three runs play the same rollouts (same seed, same starting weights) and write the same
skills; only the control's mechanism differs, and its metrics show it ran: the gate reads 1
on every distilled token without the gate, every distilled episode's skill comes from the
other game with the unrelated assignment.
"""

from __future__ import annotations

import copy

import pytest

from hindsight.config import AnalyzerConfig, ExperimentsConfig
from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.experiments.grid import Cell, cell_rl_config
from hindsight.methods import MethodContext, build_method, method_settings
from hindsight.training.checkpoint import frozen_copy
from hindsight.params import ParameterError, build
from hindsight.rollout.engine import RolloutConfig
from hindsight.policy.generation import SamplingConfig
from hindsight.rollout.tasks import make_tasks
from hindsight.training.loop import train_rl
from hindsight.training.rl_config import RLConfig

COOKING = EnvironmentSpec(
    "textworldexpress", "cookingworld", {"numLocations": 1, "numIngredients": 2, "numDistractorItems": 2, "includeDoors": 0},
    max_steps=8,
)
BASE = RLConfig(updates=1, tasks_per_update=2, group_size=2, learning_rate=1e-3, mini_batch_size=16, eval_every=0)
CONTROLS = ("seed_ungated", "seed_unrelated_skill")


def run_method(policy, tasks, name: str):
    """One update of grid method ``name`` from a copy of ``policy``: (its method's settings, its metrics)."""
    _, config = cell_rl_config(BASE, Cell(method=name, seed=0, fraction=1.0))
    policy = copy.deepcopy(policy)
    method = build_method(config, MethodContext(analyzer=AnalyzerConfig()))  # the policy writes its skills, as in the grid
    rollout = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=768), max_parallel=8, progress=False)
    result = train_rl(policy, frozen_copy(policy.model), tasks, make_env, rollout, config, method, seed=0)
    return method.settings, result.history.iloc[0]


@pytest.fixture(scope="module")
def runs(warm_policy, twc_tasks):
    """SEED and the two controls, one update each, on one twc and one cookingworld task."""
    tasks = twc_tasks[:1] + make_tasks(COOKING, "train", [0])
    return {name: run_method(warm_policy, tasks, name) for name in ("seed", *CONTROLS)}


def test_the_controls_play_and_analyse_what_seed_does(runs):
    seed = runs["seed"][1]
    for name in CONTROLS:
        metrics = runs[name][1]
        for key in ("rollout/success_rate", "rollout/env_steps", "opd/skill_parse_rate", "opd/distilled_sample_ratio"):
            assert metrics[key] == seed[key], (name, key)
    assert seed["opd/distilled_sample_ratio"] > 0  # the compact analysis parses: every episode is distilled


def test_ungated_distillation_weighs_every_distilled_token_one(runs):
    settings, metrics = runs["seed_ungated"]
    assert settings.distill_gate == "ungated" and settings.skill_assignment == "own"
    assert metrics["opd/gate_mean"] == 1.0
    assert metrics["opd/skill_unrelated_share"] == 0.0
    assert metrics["losses/opd"] != 0.0
    seed = runs["seed"][1]
    assert 0.0 < seed["opd/gate_mean"] < 1.0  # the sigmoid gate of SEED itself
    assert metrics["opd/teacher_gap_mean"] == seed["opd/teacher_gap_mean"]  # same skills, same teacher
    assert 0.0 < metrics["opd/gate_active_ratio"] < 1.0  # the share with gap > 0, not the fixed weight


def test_unrelated_skill_distils_every_episode_from_the_other_game(runs):
    settings, metrics = runs["seed_unrelated_skill"]
    assert settings.skill_assignment == "unrelated" and settings.distill_gate == "sigmoid"
    assert metrics["opd/skill_unrelated_share"] == 1.0 and metrics["opd/skill_reassigned_share"] == 1.0
    seed = runs["seed"][1]
    assert seed["opd/skill_unrelated_share"] == 0.0 and seed["opd/skill_reassigned_share"] == 0.0
    assert metrics["opd/teacher_gap_mean"] != seed["opd/teacher_gap_mean"]  # re-scored with other skills
    assert 0.0 < metrics["opd/gate_mean"] < 1.0


def test_the_controls_are_grid_methods_of_the_full_preset():
    assert {"seed_ungated", "seed_unrelated_skill"} <= set(ExperimentsConfig().presets["full"].methods)
    defaults = RLConfig()
    for name, (option, value) in {"seed_ungated": ("distill_gate", "ungated"), "seed_unrelated_skill": ("skill_assignment", "unrelated")}.items():
        start_from, config = cell_rl_config(defaults, Cell(method=name, seed=0, fraction=1.0))
        settings, default_settings = method_settings(config), method_settings(defaults, "seed")
        assert start_from == "stage1" and config.algorithm == "seed" and getattr(settings, option) == value
        changed = {
            f for f in ("distill", "distill_gate", "skill_source", "skill_assignment") if getattr(settings, f) != getattr(default_settings, f)
        }
        assert changed == {option}, name


@pytest.mark.parametrize("key, value", [("distill_gate", "hard"), ("skill_assignment", "shuffled")])
def test_a_bad_control_setting_names_the_setting_and_the_choices(key, value):
    with pytest.raises((ParameterError, ValueError), match=rf"training\.rl\.methods\.seed\b.*\b{key} must be one of \("):
        method_settings(build(RLConfig, {"methods": {"seed": {key: value}}}, "training.rl"))


def test_the_loop_labels_the_played_actions_and_seed_reads_them(runs):
    """``training.rl.action_labels`` (on by default): the played steps labelled along the gold
    sequence (twc and cookingworld: the gold solver's next action), the same labels for the
    same rollouts, and SEED's gate read on the labelled samples."""
    seed = runs["seed"][1]
    assert 0.0 < seed["labels/labelled_step_share"] <= 1.0  # at least every episode's first step
    assert 0.0 <= seed["labels/optimal_share"] <= 1.0
    for name in CONTROLS:
        for key in ("labels/labelled_step_share", "labels/optimal_share"):
            assert runs[name][1][key] == seed[key], (name, key)
    assert seed["opd/labelled_sample_share"] > 0.0
    if "opd/gate_push" in runs["seed_ungated"][1]:  # both sides were played
        assert runs["seed_ungated"][1]["opd/gate_push"] == 0.0
        assert 0.0 <= seed["opd/shift_auroc"] <= 1.0

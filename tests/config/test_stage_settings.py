"""The settings each stage actually plays with (temperature, max_length, batch tokens, group
size, seeds, prompt, held-out budget, world-model query) in the default run (``conf/base``)
and the test configuration equal those recorded before the rollout, held-out and world-model
settings were nested instead of copied field by field (issue 42).

``stage_settings_baseline.json`` was written at commit db8a3df by the same extraction on the
old classes (``RolloutConfig.sampling()``, ``HeldoutConfig``'s own fields); the stages'
call sites are restated here one for one: the skills stage's rollouts and validation
re-rollouts, Stage 1's teacher-fit and premise plays, RL's rollouts and held-out evaluation,
the final evaluation, EMPO, State2State, every experiment-grid preset and the world model.
A deliberate change of those settings in ``conf/base`` or ``conf/test`` changes the file too;
moving a key (``rollout.temperature`` -> ``rollout.sampling.temperature``, a stage's
temperature -> its ``sampling`` changes) changes nothing here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from hindsight.config import check_parameters
from hindsight.config.files import grid_settings
from hindsight.evaluation.heldout import HeldoutConfig
from hindsight.policy.logprobs import LOGPROB_TEMPERATURE
from hindsight.rollout.config import RolloutConfig

pytestmark = pytest.mark.unit

CONF = Path(__file__).resolve().parents[2] / "conf"
BASELINE = json.loads((Path(__file__).with_name("stage_settings_baseline.json")).read_text())
ADDED_SINCE_BASELINE = {"experiments.first_look.heldout", "experiments.distillation_controls.heldout", "experiments.learning_methods.heldout"}
"""Plays that did not exist when the baseline was written (a grid preset added later)."""


def _merged(env: str) -> dict:
    params = {}
    for path in sorted((CONF / "base").glob("parameters*.yml")):
        params.update(yaml.safe_load(path.read_text()))
    if env != "base":
        params.update(yaml.safe_load((CONF / env / "parameters.yml").read_text()) or {})
    return params


def _engine(config: RolloutConfig) -> dict:
    sampling = dataclasses.asdict(config.sampling)
    sampling["stop_strings"] = list(sampling["stop_strings"])
    return {
        "sampling": sampling, "group_size": config.group_size, "max_steps": config.max_steps, "seed": config.seed,
        "prompt": dataclasses.asdict(config.prompt), "max_parallel": config.max_parallel,
        "episode_replays": config.episode_replays, "progress": config.progress, "layout": config.layout,
        "backend": [config.inference_backend().name, getattr(config.inference_backend(), "compute_type", None)],
        "imagination": config.imagination is not None,
    }


def _heldout(heldout: HeldoutConfig, rollout: RolloutConfig, random_floor: bool) -> dict:
    """What ``evaluate_agents`` plays: per decoding and trial, the rollout it runs."""
    play = heldout.play
    plays = {
        f"{name}/{trial}": _engine(rollout.at(group_size=1, sampling=sampling, seed=heldout.seed + trial))
        for trial in range(play.trials_per_task) for name, sampling in play.decodings.items()
    }
    settings = {
        "episodes_per_game": play.episodes_per_game, "seen_seed_offset": heldout.seen_seed_offset, "splits": list(play.splits),
        "random_floor": random_floor, "seed": heldout.seed, "trials_per_task": play.trials_per_task, "plays": plays,
    }
    if play.split_episodes:  # a per-split budget (added after the baseline; none there)
        settings["split_episodes"] = dict(play.split_episodes)
    return settings


def _stages(params: dict) -> dict:
    settings = check_parameters(params)
    project, skills = settings["project"], settings["skills"]
    rl_rollout = project.rollout_config()  # config.rl.rl_setup's
    out = {
        "skills.rollouts": _engine(project.rollout_config(group_size=skills.rollouts_per_task, sampling=skills.sampling)),
        "skills.validation": _engine(project.rollout_config(
            group_size=skills.validation.rollouts, sampling=skills.sampling, seed=project.seeds.validation
        )),
        "stage1.teacher_fit": _engine(project.rollout_config(
            group_size=1, sampling=settings["stage1"].teacher_fit.sampling, seed=project.seeds.validation
        )),
        "stage1.premise": _engine(project.rollout_config(group_size=1, sampling={"temperature": LOGPROB_TEMPERATURE}, seed=project.seeds.evaluation)),
        "training.rollout": _engine(rl_rollout),
        # RL's held-out evaluation plays without the random floor (evaluation.heldout.heldout_evaluator)
        "training.heldout": _heldout(project.heldout_config(settings["training"].heldout), rl_rollout, False),
        "evaluation": _heldout(project.heldout_config(settings["evaluation"].heldout), project.rollout_config(), settings["evaluation"].random_floor),
        "empo.rollout": _engine(project.rollout_config()),
        "state2state.heldout": _heldout(project.heldout_config(settings["state2state"].heldout), project.rollout_config(), False),
        "world_model.query": dataclasses.asdict(settings["world_model"].query_settings()),
    }
    grid = grid_settings(params.get("training"), params.get("experiments"))
    for name, preset in grid.experiments.presets.items():
        out[f"experiments.{name}.heldout"] = _heldout(project.heldout_config(preset.heldout), rl_rollout, False)
    return out


@pytest.mark.parametrize("env", sorted(BASELINE))
def test_every_stage_plays_with_the_settings_it_had_before_the_nesting(env):
    now = json.loads(json.dumps(_stages(_merged(env))))
    before = BASELINE[env]
    assert sorted(set(now) - ADDED_SINCE_BASELINE) == sorted(before)
    for stage in before:
        assert now[stage] == before[stage], f"{env}: {stage}"

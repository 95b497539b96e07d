"""The sampling temperature of RL's rollouts and the temperature every log-prob is taken at
(``policy.logprobs.LOGPROB_TEMPERATURE``) stay tied: in the default run and in every job
configuration that trains with RL they are equal, so the PPO ratio and the distillation
target are on-policy; Stage 1's teacher fit and premise plays sample as RL does; and a run
whose RL temperature differs is warned about. ``conf/test`` samples at 0.4 on purpose (the
tiny test policy; the warning says so)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from hindsight.config import check_parameters, rl_setup
from hindsight.params import build
from hindsight.config import ProjectConfig, TrainingConfig
from hindsight.policy.logprobs import LOGPROB_TEMPERATURE

pytestmark = pytest.mark.unit

CONF = Path(__file__).resolve().parents[2] / "conf"
JOBS = sorted(path.parent.name for path in CONF.glob("*/parameters.yml") if path.parent.name != "test")


def _settings(env: str) -> dict:
    params = {}
    for path in sorted((CONF / "base").glob("parameters*.yml")):
        params.update(yaml.safe_load(path.read_text()))
    if env != "base":
        params.update(yaml.safe_load((CONF / env / "parameters.yml").read_text()) or {})
    return check_parameters(params)


@pytest.mark.parametrize("env", JOBS)
def test_rl_samples_at_the_temperature_of_the_logprobs(env):
    settings = _settings(env)
    project = settings["project"]
    assert project.rollout_config().sampling.temperature == LOGPROB_TEMPERATURE
    teacher_fit = project.rollout_config(sampling=settings["stage1"].teacher_fit.sampling)
    assert teacher_fit.sampling.temperature == LOGPROB_TEMPERATURE  # "as RL samples"


def test_a_run_whose_rl_temperature_differs_is_warned_about(caplog):
    training = TrainingConfig(tasks_per_game=2)
    with caplog.at_level(logging.WARNING, logger="hindsight.config.rl"):
        setup = rl_setup(ProjectConfig(), training)
    assert setup.rollout.sampling.temperature == LOGPROB_TEMPERATURE and not caplog.records
    hot = build(ProjectConfig, {"rollout": {"sampling": {"temperature": 0.7}}})
    with caplog.at_level(logging.WARNING, logger="hindsight.config.rl"):
        rl_setup(hot, training)
    assert any("off-policy" in record.getMessage() for record in caplog.records)

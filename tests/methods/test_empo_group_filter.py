"""EMPO's group filter (``training.rl.methods.empo.min_group_score_std``): which groups of a
known batch it drops, what it logs, and how its setting is checked."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.methods import build_method
from hindsight.params import ParameterError
from hindsight.policy.encoding import StepSample
from hindsight.rollout.engine import RolloutConfig
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig

pytestmark = pytest.mark.unit


def _batch() -> RolloutBatch:
    # group "flat": two episodes matching every step (rewards 1, 1): step-0 returns 1.5 and 1.5.
    # group "varied": one matched (1.5) and one patched at step 0 (0.55, break): std 0.475.
    rows = [
        ("f1", "flat", 0, 1.0, True), ("f1", "flat", 1, 1.0, True),
        ("f2", "flat", 0, 1.0, True), ("f2", "flat", 1, 1.0, True),
        ("v1", "varied", 0, 1.0, True), ("v1", "varied", 1, 1.0, True),
        ("v2", "varied", 0, 0.55, False), ("v2", "varied", 1, 1.0, True),
    ]
    table = pd.DataFrame(rows, columns=["episode_id", "group_id", "step", "reward", "action_valid"])
    table["won"] = False
    table["source"] = ["rollout"] * 6 + ["patched", "rollout"]
    samples = [
        StepSample(episode_id=e, group_id=g, step=s, prompt_ids=[1], response_ids=[i]) for i, (e, g, s, *_) in enumerate(rows)
    ]
    return RolloutBatch(table=table, samples=samples, played=table)


def _filter(threshold: float) -> RolloutBatch:
    config = RLConfig(algorithm="empo", methods={"empo": {"min_group_score_std": threshold}})
    batch = _batch()
    build_method(config).after_rollout(None, batch, RolloutConfig(), config, seed=0, update=0)
    return batch


def test_a_threshold_drops_exactly_the_flat_group_with_its_samples():
    batch = _filter(0.3)
    assert batch.table["group_id"].unique().tolist() == ["varied"]
    assert [sample.episode_id for sample in batch.samples] == batch.table["episode_id"].tolist() == ["v1", "v1", "v2", "v2"]
    assert [sample.response_ids for sample in batch.samples] == [[4], [5], [6], [7]]  # aligned with the rows
    assert batch.metrics["empo/dropped_groups"] == 1.0 and batch.metrics["empo/kept_groups"] == 1.0
    assert len(batch.played) == 8  # every played row still counts in the rollout metrics
    config = RLConfig(algorithm="empo", methods={"empo": {"min_group_score_std": 0.3}})
    assert build_method(config).advantages(batch, config, max_steps=2).shape == (4,)


def test_a_threshold_above_every_spread_drops_every_group_and_scores_an_empty_batch():
    batch = _filter(0.5)  # varied: 0.475 < 0.5
    assert len(batch) == 0 and batch.metrics["empo/dropped_groups"] == 2.0
    config = RLConfig(algorithm="empo", methods={"empo": {"min_group_score_std": 0.5}})
    assert build_method(config).advantages(batch, config, max_steps=2).shape == (0,)


def test_threshold_zero_keeps_both_groups():
    batch = _filter(0.0)
    assert len(batch) == 8 and batch.table["group_id"].unique().tolist() == ["flat", "varied"]
    assert "empo/dropped_groups" not in batch.metrics


def test_a_negative_threshold_is_a_clear_error_naming_the_key():
    with pytest.raises(ParameterError, match=r"training\.rl\.methods\.empo\.min_group_score_std must be >= 0"):
        build_method(RLConfig(algorithm="empo", methods={"empo": {"min_group_score_std": -0.1}}))


def test_the_filter_refuses_asynchronous_rollouts_and_torchrun():
    config = RLConfig(algorithm="empo", methods={"empo": {"min_group_score_std": 0.3}})
    method = build_method(config)
    method.check(config, parallel=False)
    with pytest.raises(ValueError, match=r"min_group_score_std"):
        method.check(config, parallel=True)
    asynchronous = RLConfig(algorithm="empo", schedulers={"async_rollouts": {"enabled": True}}, methods={"empo": {"min_group_score_std": 0.3}})
    with pytest.raises(ValueError, match=r"min_group_score_std.*async_rollouts"):
        build_method(asynchronous).check(asynchronous, parallel=False)
    off = RLConfig(algorithm="empo")
    build_method(off).check(off, parallel=True)  # off: nothing to refuse
